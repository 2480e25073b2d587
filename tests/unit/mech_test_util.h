// Helpers shared by the tests that compile and run models (multibody, inverse dynamics,
// functions): compile a model given as text, find an output column by name, simulate and keep
// every output row.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "runtime/solvers/Integrator.h"

namespace mbs::testutil {

// A file name in the test's temporary directory, unique per process.
inline std::string temp_path(const std::string& name) {
  return testing::TempDir() + std::to_string(getpid()) + "_" + name;
}

// Writes `text` to <name>.mbs and compiles it with `options` (its `file` is set here); a model
// error fails the test with the diagnostics.
inline std::shared_ptr<const rt::CompiledModel> compile_source(const std::string& name,
                                                               const std::string& text,
                                                               CompileOptions options = {}) {
  options.file = temp_path(name + ".mbs");
  std::ofstream(options.file) << text;
  std::ostringstream emit, diag;
  auto r = compile(options, emit, diag);
  EXPECT_TRUE(r.ok) << diag.str();
  return r.model;
}

// The column of output `name` (fails the test and returns 0 if there is none).
inline int output_column(const rt::CompiledModel& m, const std::string& name) {
  for (size_t i = 0; i < m.output_names.size(); ++i)
    if (m.output_names[i] == name) return static_cast<int>(i);
  ADD_FAILURE() << "no output " << name;
  return 0;
}

// The rows of one simulation: time and every output at each output point.
struct Run {
  std::vector<double> t;
  std::vector<std::vector<double>> rows;
  rt::SolveStatus status{};
  rt::Statistics stats;
};

inline Run simulate(const rt::CompiledModel& m, const rt::SolverOptions& options) {
  auto solver = rt::make_integrator(m, options);
  Run run;
  run.status = solver->run([&](double t, std::span<const double> out) {
    run.t.push_back(t);
    run.rows.emplace_back(out.begin(), out.end());
    return 0;
  });
  run.stats = solver->statistics();
  return run;
}

}  // namespace mbs::testutil
