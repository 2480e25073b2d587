// The dependencies of the state derivatives in the model description (rt::fmi::
// derivative_dependencies, from the structure of the leading matrix and the Jacobians) against
// finite differences of the derivatives that an FMU computes (rt::fmi::Unit, model exchange):
// every derivative that changes with a state lists it, and decoupled parts of a model do not
// list each other's states.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "runtime/fmi/Unit.h"
#include "runtime/fmi/Variables.h"
#include "tests/unit/mech_test_util.h"
#include "tools/fmu/ModelDescription.h"

namespace mbs::fmu {
namespace {

using rt::fmi::Unit;

// d derivative k / d state j by central differences at the start state (plus an offset, so no
// symmetry hides a dependency): the pairs with a change above 1e-7.
std::set<std::pair<size_t, size_t>> numerical_pattern(std::shared_ptr<const rt::CompiledModel> m,
                                                      std::shared_ptr<rt::fmi::VariableTable> t) {
  Unit u(m, t, rt::SolverOptions{}, Unit::Kind::ModelExchange);
  EXPECT_EQ(u.setup_experiment(std::nullopt, 0.0, std::nullopt), rt::fmi::Status::Ok);
  EXPECT_EQ(u.exit_initialization(), rt::fmi::Status::Ok) << u.message();
  const size_t n = u.n_states();
  std::vector<double> x(n), xp(n), dp(n), dm(n);
  EXPECT_EQ(u.get_continuous_states(x), rt::fmi::Status::Ok);
  for (size_t j = 0; j < n; ++j) x[j] += 0.1 + 0.05 * static_cast<double>(j);
  std::set<std::pair<size_t, size_t>> pattern;
  for (size_t j = 0; j < n; ++j) {
    const double eps = 1e-6;
    xp = x;
    xp[j] += eps;
    EXPECT_EQ(u.set_continuous_states(xp), rt::fmi::Status::Ok);
    EXPECT_EQ(u.get_derivatives(dp), rt::fmi::Status::Ok);
    xp[j] -= 2 * eps;
    EXPECT_EQ(u.set_continuous_states(xp), rt::fmi::Status::Ok);
    EXPECT_EQ(u.get_derivatives(dm), rt::fmi::Status::Ok);
    for (size_t k = 0; k < n; ++k)
      if (std::fabs(dp[k] - dm[k]) / (2 * eps) > 1e-7) pattern.insert({k, j});
  }
  return pattern;
}

void check(const std::string& name, const std::string& text, size_t expect_missing_min) {
  auto m = testutil::compile_source(name, text);
  ASSERT_TRUE(m);
  auto t = std::make_shared<rt::fmi::VariableTable>();
  ASSERT_EQ(rt::fmi::fmu_variables(*m, {}, *t), "");
  const auto deps = rt::fmi::derivative_dependencies(*m, *t);
  ASSERT_EQ(deps.size(), t->derivatives.size());
  const auto numeric = numerical_pattern(m, t);
  size_t structural = 0;
  for (size_t k = 0; k < deps.size(); ++k) {
    structural += deps[k].size();
    for (size_t j = 0; j < t->states.size(); ++j) {
      const bool listed = std::find(deps[k].begin(), deps[k].end(), t->states[j]) != deps[k].end();
      if (numeric.count({k, j})) {
        EXPECT_TRUE(listed) << name << ": derivative " << t->vars[t->derivatives[k]].name
                            << " changes with " << t->vars[t->states[j]].name
                            << " but does not list it";
      }
    }
  }
  // the structure is not "everything": decoupled parts leave entries out
  const size_t all = deps.size() * t->states.size();
  EXPECT_GE(all - structural, expect_missing_min) << name;
}

TEST(FmuDependencies, DecoupledOscillatorsListOnlyTheirOwnStates) {
  check("deps_osc",
        "model TwoOscillators\n  Real x1(start = 1), x2(start = 2), z(start = 0.5);\n"
        "equation\n  der(der(x1)) = -4*x1 - 0.1*der(x1);\n  der(der(x2)) = -9*sin(x2);\n"
        "  der(z) = -z*x1;\nend TwoOscillators;\n",
        // 5 states: der(x1) lists 1, der(x2) 1, der(der(x1)) 2, der(der(x2)) 1, der(z) 2
        25 - 7);
}

TEST(FmuDependencies, CoupledMassesThroughTheMassMatrix) {
  // a mass matrix that couples a and b: both accelerations depend on both positions
  check("deps_coupled",
        "model Coupled\n  Real a(start = 0.3), b(start = -0.2), c(start = 1);\nequation\n"
        "  2*der(der(a)) + der(der(b)) = -a;\n  der(der(a)) + 3*der(der(b)) = -sin(b);\n"
        "  der(der(c)) = -c;\nend Coupled;\n",
        // c is decoupled from a and b
        16);
}

// Outputs: d output / d state by central differences (model exchange: set the states, get the
// outputs) is listed by output_dependencies (compiled with sensitivities), and a decoupled output
// does not list the other part's states.
TEST(FmuDependencies, OutputsListTheStatesTheyChangeWith) {
  CompileOptions o;
  o.sensitivities = true;
  auto m = testutil::compile_source(
      "deps_out",
      "model Outs\n  Real x1(start = 1), x2(start = 2);\n  output Real a, b, c;\nequation\n"
      "  der(der(x1)) = -4*x1;\n  der(der(x2)) = -9*sin(x2) - der(x2);\n  a = x1*x1;\n"
      "  b = der(der(x2));\n  c = 2*der(x1) + x2;\nend Outs;\n",
      o);
  ASSERT_TRUE(m);
  auto t = std::make_shared<rt::fmi::VariableTable>();
  ASSERT_EQ(rt::fmi::fmu_variables(*m, {"a", "b", "c"}, *t), "");
  const auto deriv = rt::fmi::derivative_dependencies(*m, *t);
  const auto deps = rt::fmi::output_dependencies(*m, *t, deriv, true);
  ASSERT_EQ(deps.size(), 3u);
  Unit u(m, t, rt::SolverOptions{}, Unit::Kind::ModelExchange);
  ASSERT_EQ(u.setup_experiment(std::nullopt, 0.0, std::nullopt), rt::fmi::Status::Ok);
  ASSERT_EQ(u.exit_initialization(), rt::fmi::Status::Ok) << u.message();
  const size_t n = u.n_states();
  std::vector<double> x(n), xp(n);
  ASSERT_EQ(u.get_continuous_states(x), rt::fmi::Status::Ok);
  std::vector<uint32_t> vrs;
  for (int32_t i : t->outputs) vrs.push_back(t->vars[static_cast<size_t>(i)].vr);
  std::vector<double> yp(vrs.size()), ym(vrs.size());
  size_t listed_total = 0;
  for (const auto& d : deps) listed_total += d.size();
  for (size_t j = 0; j < n; ++j) {
    const double eps = 1e-6;
    xp = x;
    xp[j] += eps;
    ASSERT_EQ(u.set_continuous_states(xp), rt::fmi::Status::Ok);
    ASSERT_EQ(u.get_float64(vrs, yp), rt::fmi::Status::Ok);
    xp[j] -= 2 * eps;
    ASSERT_EQ(u.set_continuous_states(xp), rt::fmi::Status::Ok);
    ASSERT_EQ(u.get_float64(vrs, ym), rt::fmi::Status::Ok);
    for (size_t k = 0; k < vrs.size(); ++k) {
      if (std::fabs(yp[k] - ym[k]) / (2 * eps) <= 1e-7) continue;
      EXPECT_NE(std::find(deps[k].begin(), deps[k].end(), t->states[j]), deps[k].end())
          << "output " << k << " changes with " << t->vars[t->states[j]].name;
    }
  }
  // a = x1^2 lists x1 only; b = der(x2,2) lists x2 and der(x2); c lists der(x1) and x2
  EXPECT_EQ(deps[0].size(), 1u);
  EXPECT_EQ(deps[1].size(), 2u);
  EXPECT_EQ(deps[2].size(), 2u);
  EXPECT_EQ(listed_total, 5u);
  // co-simulation: only inputs (none here) -- every output lists nothing
  const auto cs = rt::fmi::output_dependencies(*m, *t, deriv, false);
  ASSERT_EQ(cs.size(), 3u);
  for (const auto& d : cs) EXPECT_TRUE(d.empty());
}

TEST(FmuDependencies, ThePendulumChainIsWritten) {
  auto m = testutil::compile_source("deps_chain",
                                    "model C\n  import Mechanics.*;\n  World world;\n"
                                    "  Revolute j(n = {0, 0, 1}, phi(start = 1, fixed = true));\n"
                                    "  Body b(m = 1, r_cm = {0, -0.5, 0}, I = diagonal({0.01, "
                                    "0.01, 0.01}));\nequation\n  connect(world.frame, "
                                    "j.frame_a);\n  connect(j.frame_b, b.frame_a);\nend C;\n");
  ASSERT_TRUE(m);
  rt::fmi::VariableTable t;
  ASSERT_EQ(rt::fmi::fmu_variables(*m, {}, t), "");
  DescriptionOptions o;
  o.model_exchange = true;
  o.model_identifier = "C";
  o.token = "{t}";
  for (FmiVersion version : {FmiVersion::V2, FmiVersion::V3}) {
    o.version = version;
    const bool v3 = version == FmiVersion::V3;
    std::string error;
    const std::string xml = model_description(*m, t, o, &error);
    ASSERT_FALSE(xml.empty()) << error;
    EXPECT_NE(xml.find("dependencies=\""), std::string::npos) << xml;
    // no variable with an exact start value is an initial unknown (der(q) is the state der(q))
    for (const rt::fmi::Variable& v : t.vars) {
      if (v.initial != rt::fmi::Initial::Exact) continue;
      const std::string unknown =
          v3 ? "<InitialUnknown valueReference=\"" + std::to_string(v.vr) + "\""
             : "<Unknown index=\"" + std::to_string(v.vr + 1) + "\"";
      const size_t section = xml.find(v3 ? "<InitialUnknown " : "<InitialUnknowns>");
      if (section == std::string::npos) continue;
      EXPECT_EQ(xml.find(unknown, section), std::string::npos) << v.name << "\n" << xml;
    }
  }
}

}  // namespace
}  // namespace mbs::fmu
