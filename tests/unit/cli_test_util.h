// Helpers shared by the tests that run the built mbsc (test_cli*.cpp): run it in the source
// directory, read what it leaves behind. MBS_SOURCE_DIR and MBS_MBSC_PATH come from
// tests/CMakeLists.txt.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace mbs::clitest {

struct Result {
  int code = -1;  // the exit code, or 128 + the signal that ended it
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A path in the test's temporary directory, unique per process (ctest runs test cases in
// parallel processes).
inline std::string tmp(const std::string& name) {
  return testing::TempDir() + std::to_string(::getpid()) + "_" + name;
}

// Runs mbsc with `args` (a shell-quoted string) in the source directory; `env` is put in front
// of the command (e.g. "MBS_CACHE_DIR='/tmp/c' ").
inline Result mbsc(const std::string& args, const std::string& env = "") {
  const std::string out = tmp("mbsc_out.txt"), err = tmp("mbsc_err.txt");
  const std::string cmd = std::string("cd '") + MBS_SOURCE_DIR + "' && " + env + "'" +
                          MBS_MBSC_PATH + "' " + args + " >'" + out + "' 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// The fields of every line (no quoting: mbs's own names of the tested models have no commas).
inline std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    // a quoted field (a header name such as "s.R[1,1]") may hold commas; its quotes go
    std::vector<std::string> cells(1);
    bool quoted = false;
    for (char ch : line) {
      if (ch == '"')
        quoted = !quoted;
      else if (ch == ',' && !quoted)
        cells.emplace_back();
      else
        cells.back() += ch;
    }
    if (line.empty()) cells.clear();
    rows.push_back(cells);
  }
  return rows;
}

}  // namespace mbs::clitest
