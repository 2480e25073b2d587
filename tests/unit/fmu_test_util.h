// Helpers of the FMU tests: a temporary directory, a program run in an empty environment (as an
// importer on a machine without mbs), a command's output (test_fmu_link, test_fmu_end_to_end);
// small models compiled in-process (the tests of the FMU runtime: co-simulation stepping,
// rt::fmi::Unit).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "mech_test_util.h"
#include "runtime/model/CompiledModel.h"

namespace mbs::testutil {

namespace fs = std::filesystem;

// A fresh temporary directory, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "mbs-test-fmu-XXXXXX").string();
    if (mkdtemp(pattern.data())) path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

struct ProgramRun {
  int exit_code = -1;
  std::string out;
};

// Runs a program with the given arguments and an empty environment (envp = {NULL}); returns its
// exit code and standard output (and standard error with merge_stderr).
inline ProgramRun run_without_environment(const std::vector<std::string>& args,
                                          bool merge_stderr = false) {
  ProgramRun r;
  int fds[2];
  if (pipe(fds) != 0) return r;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    if (merge_stderr) dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    char* envp[] = {nullptr};
    execve(argv[0], argv.data(), envp);
    _exit(127);
  }
  close(fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) r.out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

inline std::string command_output(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

inline std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> result;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) result.push_back(line);
  return result;
}

// x'' = -k x, x(0) = 1, x'(0) = 0 (k = 4: x = cos 2t), and a first-order z' = -z, z(0) = 1.
inline const char* const kOscillatorSource =
    "model Osc\n  parameter Real k = 4;\n  Real x(start = 1);\n  Real z(start = 1);\n"
    "  Real e;\nequation\n  der(der(x)) = -k*x;\n  der(z) = -z;\n  e = x*x + der(x)*der(x)/k;\n"
    "end Osc;\n";

// y' = u (first order) and p'' = u (second order) with u a top-level input: for u held over each
// step, y and p are exact for every method.
inline const char* const kRampSource =
    "model Ramp\n  input Real u = 0;\n  parameter Real c = 2;\n  Real y(start = 0);\n"
    "  Real p(start = 0);\n  Real w;\nequation\n  der(y) = u;\n  der(der(p)) = u;\n  w = c*y;\n"
    "end Ramp;\n";

}  // namespace mbs::testutil
