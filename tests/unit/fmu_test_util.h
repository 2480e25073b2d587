// Helpers of the tests of the FMU runtime (co-simulation stepping, rt::fmi::Unit): small models
// compiled in-process, and top-level inputs made from parameters for as long as the compiler
// does not produce CompiledModel::inputs itself.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "mech_test_util.h"
#include "runtime/model/CompiledModel.h"

namespace mbs::testutil {

// x'' = -k x, x(0) = 1, x'(0) = 0 (k = 4: x = cos 2t), and a first-order z' = -z, z(0) = 1.
inline const char* const kOscillatorSource =
    "model Osc\n  parameter Real k = 4;\n  Real x(start = 1);\n  Real z(start = 1);\n"
    "  Real e;\nequation\n  der(der(x)) = -k*x;\n  der(z) = -z;\n  e = x*x + der(x)*der(x)/k;\n"
    "end Osc;\n";

// y' = u (first order) and p'' = u (second order) with u an input (made from the parameter u):
// for u held over each step, y and p are exact for every method.
inline const char* const kRampSource =
    "model Ramp\n  parameter Real u = 0;\n  parameter Real c = 2;\n  Real y(start = 0);\n"
    "  Real p(start = 0);\n  Real w;\nequation\n  der(y) = u;\n  der(der(p)) = u;\n  w = c*y;\n"
    "end Ramp;\n";

// `m` with the parameters named in `names` turned into top-level inputs (their slots and
// start values kept). The parameter bindings are dropped: the test models have literal
// parameter values only.
inline std::shared_ptr<const rt::CompiledModel> with_inputs(const rt::CompiledModel& model,
                                                            const std::vector<std::string>& names) {
  auto m = std::make_shared<rt::CompiledModel>(model);
  for (const std::string& name : names) {
    size_t p = 0;
    while (p < m->parameters.size() && m->parameters[p].name != name) ++p;
    if (p == m->parameters.size()) {
      ADD_FAILURE() << "no parameter " << name;
      continue;
    }
    m->inputs.push_back(m->parameters[p]);
    m->input_slot.push_back(m->parameter_slot[p]);
    const auto at = [p](auto& vec) {
      if (p < vec.size()) vec.erase(vec.begin() + static_cast<std::ptrdiff_t>(p));
    };
    at(m->parameters);
    at(m->parameter_slot);
    at(m->parameter_compile_time);
    at(m->parameter_min);
    at(m->parameter_max);
    at(m->parameter_unit);
    at(m->parameter_description);
  }
  m->parameter_bindings = {};
  m->parameter_binding_passes = 0;
  return m;
}

}  // namespace mbs::testutil
