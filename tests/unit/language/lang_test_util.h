// Helpers of the language tests (test_language: tests/unit/test_language.cpp and
// tests/unit/language/*.cpp, one file per chapter of docs/language.md): compile a model given as
// text, expect it refused with a diagnostic, simulate it and read a column at the end.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "../mech_test_util.h"

namespace mbs::langtest {

using testutil::compile_source;
using testutil::output_column;

// Compiles `text` expecting a model error; returns the diagnostics text ("" and a test failure
// when it compiles).
inline std::string compile_error(const std::string& name, const std::string& text) {
  CompileOptions options;
  options.file = testutil::temp_path(name + ".mbs");
  std::ofstream(options.file) << text;
  std::ostringstream emit, diag;
  auto r = compile(options, emit, diag);
  EXPECT_FALSE(r.ok) << "compiled although it should not: " << name;
  return diag.str();
}

// Simulates `m` to t_end with a fixed step h (gen-alpha unless `kind` says otherwise), keeping
// every row.
inline testutil::Run run(const rt::CompiledModel& m, double t_end, double h = 1e-3,
                         rt::SolverKind kind = rt::SolverKind::GenAlpha) {
  rt::SolverOptions o;
  o.solver = kind;
  o.t_end = t_end;
  o.h = h;
  return testutil::simulate(m, o);
}

// The value of output `name` in the last row of `r`.
inline double last(const rt::CompiledModel& m, const testutil::Run& r, const std::string& name) {
  return r.rows.back()[static_cast<size_t>(output_column(m, name))];
}

}  // namespace mbs::langtest
