// Helpers shared by the multibody and inverse-dynamics tests: compile a model given as text, find
// an output column by name.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "compiler/driver/Compile.h"

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

}  // namespace mbs::testutil
