// Diagnostics as users see them: every tests/diagnostics/fail_*.mbs must make `mbsc` exit with
// code 1 and print exactly the text in the matching fail_*.expected; every example must compile
// with no diagnostic at all; every diagnostic kind of the registry must be produced by some
// fail_*.mbs (or be listed below with the reason it cannot be). Malformed input of any kind ends
// with a diagnostic and exit code 1, never a crash.
//
// A fail file may start with comment lines `// args: ...` (appended to the command line),
// `// command: ...` (the whole argument list) and `// exit: N` (for files that only warn). Set
// MBS_UPDATE_EXPECTED=1 to write missing .expected files (then read every one of them before
// committing: they are the specification).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "compiler/diag/Diagnostics.h"
#include "compiler/driver/Compile.h"

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  return mbs::clitest::slurp(p.string());
}

// mbsc's exit code and stderr, with paths under the source tree shown relative to it (library
// files are named by their absolute path, which differs between checkouts).
mbs::clitest::Result mbsc(const std::string& args) {
  mbs::clitest::Result r = mbs::clitest::mbsc(args);
  const std::string src = std::string(MBS_SOURCE_DIR) + "/";
  for (size_t at; (at = r.err.find(src)) != std::string::npos;) r.err.erase(at, src.size());
  return r;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string w;
  while (ss >> w) out.push_back(w);
  return out;
}

struct Case {
  std::string name;  // fail_x
  std::string rel;   // tests/diagnostics/fail_x.mbs
  std::string args;  // full mbsc arguments
  fs::path expected;
  int exit_code = 1;  // `// exit: N` for files that only warn
};

std::vector<Case> cases() {
  std::vector<Case> out;
  fs::path dir = fs::path(MBS_SOURCE_DIR) / "tests" / "diagnostics";
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string fn = e.path().filename().string();
    if (fn.rfind("fail_", 0) != 0 || e.path().extension() != ".mbs") continue;
    Case c;
    c.name = e.path().stem().string();
    c.rel = "tests/diagnostics/" + fn;
    c.args = c.rel;
    std::stringstream text(slurp(e.path()));
    std::string line;
    while (std::getline(text, line) && line.rfind("//", 0) == 0) {
      if (line.rfind("// args:", 0) == 0) c.args = c.rel + " " + line.substr(8);
      if (line.rfind("// command:", 0) == 0) c.args = line.substr(11);
      if (line.rfind("// exit:", 0) == 0) c.exit_code = std::stoi(line.substr(8));
    }
    c.expected = dir / (c.name + ".expected");
    out.push_back(c);
  }
  std::sort(out.begin(), out.end(), [](const Case& a, const Case& b) { return a.name < b.name; });
  return out;
}

// The kinds a case reports, from the library (same options as the command line).
std::vector<std::string> kinds_of(const Case& c) {
  mbs::CompileOptions o;
  auto words = split(c.args);
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "-I" && i + 1 < words.size()) {
      o.include_dirs.push_back(std::string(MBS_SOURCE_DIR) + "/" + words[++i]);
    } else if (w == "--set" && i + 1 < words.size()) {
      std::string kv = words[++i];
      o.overrides[kv.substr(0, kv.find('='))] = std::stod(kv.substr(kv.find('=') + 1));
    } else if (w == "--start" && i + 1 < words.size()) {
      std::string kv = words[++i];
      o.start_overrides[kv.substr(0, kv.find('='))] = std::stod(kv.substr(kv.find('=') + 1));
    } else if (w == "--model" && i + 1 < words.size()) {
      o.model = words[++i];
    } else if (w == "--project-start-velocities") {
      o.project_start_velocities = true;
    } else if (o.file.empty()) {
      o.file = std::string(MBS_SOURCE_DIR) + "/" + w;
    }
  }
  std::ostringstream emit, diag;
  return mbs::compile(o, emit, diag).diagnostic_kinds;
}

// Each fail file is run once and checked twice: its text must be exactly the expected one, and
// every error and warning in it must name where it comes from: `file:line:col: error: ...`, or
// `file: error: ...` for a whole file. (Usage errors of the command line itself, exit code 2, may
// instead be `mbsc: error: ...`.) A kind reported without a location fails here, through the fail
// file that produces it. The files are split into kShards tests by their place in the sorted
// list, so that ctest runs the shards side by side (each run of mbsc under the sanitizers costs
// about a quarter of a second before main).
constexpr int kShards = 4;

void check_locations(const Case& c, const std::string& err) {
  std::stringstream lines(err);
  std::string line;
  size_t heads = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == ' ') continue;  // source excerpt and caret
    for (const char* level : {"error: ", "warning: "}) {
      const size_t at = line.find(level);
      if (at == std::string::npos || (at > 0 && line.compare(at - 2, 2, ": ") != 0)) continue;
      ++heads;
      const std::string where = at == 0 ? std::string() : line.substr(0, at - 2);
      if (c.exit_code == 2 && where == "mbsc") continue;
      EXPECT_FALSE(where.empty()) << "a diagnostic without a location: " << line;
      const std::string file = where.substr(0, where.find(':'));
      EXPECT_TRUE(fs::exists(fs::path(MBS_SOURCE_DIR) / file) || c.name == "fail_file_not_found")
          << "the location names no file: " << line;
    }
  }
  EXPECT_GT(heads, 0u) << err;
}

class FailFiles : public testing::TestWithParam<int> {};

TEST_P(FailFiles, ProduceExactlyTheExpectedTextWithLocations) {
  const bool update = std::getenv("MBS_UPDATE_EXPECTED") != nullptr;
  const auto all = cases();
  ASSERT_GE(all.size(), 30u);
  for (size_t i = static_cast<size_t>(GetParam()); i < all.size(); i += kShards) {
    const Case& c = all[i];
    SCOPED_TRACE(c.rel);
    mbs::clitest::Result r = mbsc(c.args);
    EXPECT_EQ(r.code, c.exit_code) << r.err;
    check_locations(c, r.err);
    if (!fs::exists(c.expected)) {
      if (update) std::ofstream(c.expected, std::ios::binary) << r.err;
      ADD_FAILURE() << "missing " << c.expected << "; mbsc printed:\n" << r.err;
      continue;
    }
    EXPECT_EQ(r.err, slurp(c.expected));
  }
}

INSTANTIATE_TEST_SUITE_P(Diagnostics, FailFiles, testing::Range(0, kShards));

TEST(Diagnostics, EveryKindIsProducedBySomeTest) {
  // kinds that no source file can provoke, and why
  const std::map<std::string, std::string> exempt = {
      {"jit_failed", "an internal error of LLVM code generation; test_codegen covers failures"},
      {"cache_entry_damaged", "needs a damaged object cache; test_cli_cache provokes it"},
      {"cache_entry_undeletable", "needs an undeletable object cache entry; test_cli_cache"},
      {"model_cache_entry_damaged",
       "needs a damaged model cache; test_model_cache, test_cli_cache"},
      {"model_cache_entry_undeletable", "needs an undeletable model cache entry; test_cli_cache"},
  };
  // the objectives of a study are texts of their own, not model files: test_objectives
  // produces every objective_* kind (Objectives.EveryObjectiveDiagnosticKindIsProduced)
  std::set<std::string> seen;
  for (const auto& c : cases())
    for (const auto& k : kinds_of(c)) seen.insert(k);
  for (size_t i = 0; i < mbs::diag_kind_count(); ++i) {
    std::string name = mbs::diag_info(static_cast<mbs::DiagKind>(i)).name;
    if (exempt.count(name) || name.rfind("objective_", 0) == 0) continue;
    EXPECT_TRUE(seen.count(name)) << "no tests/diagnostics/fail_*.mbs produces '" << name << "'";
  }
}

TEST(Diagnostics, ExamplesAndLibrariesCompileWithoutAnyDiagnostic) {
  for (const auto& e : fs::directory_iterator(fs::path(MBS_SOURCE_DIR) / "examples")) {
    if (e.path().extension() != ".mbs") continue;
    SCOPED_TRACE(e.path().string());
    mbs::clitest::Result r = mbsc("'" + e.path().string() + "'");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("is fine"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("error"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  }
}

TEST(Diagnostics, MalformedInputNeverCrashes) {
  std::string dir = testing::TempDir() + std::to_string(getpid()) + "_";
  std::vector<std::pair<std::string, std::string>> inputs;
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk += static_cast<char>((i * 7919 + 13) % 256);
  inputs.emplace_back("junk.mbs", junk);
  inputs.emplace_back("empty.mbs", "");
  inputs.emplace_back("spaces.mbs", "   \n\t\n // only a comment\n");
  inputs.emplace_back("long_line.mbs", "model M Real x(start = 1); equation der(x) = " +
                                           std::string(1 << 20, 'x') + "; end M;");
  inputs.emplace_back("long_sum.mbs", [] {
    std::string s = "model M Real x(start = 1); equation der(x) = x";
    while (s.size() < (1u << 20)) s += "+x";
    return s + "; end M;";
  }());
  inputs.emplace_back("deep_parens.mbs",
                      "model M Real x; equation x = " + std::string(100000, '(') + "1" +
                          std::string(100000, ')') + "; end M;");
  inputs.emplace_back("deep_braces.mbs",
                      "model M Real x; equation x = " + std::string(100000, '{') + "1" +
                          std::string(100000, '}') + "; end M;");
  inputs.emplace_back("deep_unary.mbs",
                      "model M Real x; equation x = " + std::string(100000, '-') + "1; end M;");
  inputs.emplace_back("deep_if.mbs", [] {
    std::string s = "model M Real x; equation x = ";
    for (int i = 0; i < 50000; ++i) s += "if true then ";
    s += "1";
    for (int i = 0; i < 50000; ++i) s += " else 0";
    return s + "; end M;";
  }());
  inputs.emplace_back("deep_mod.mbs", [] {
    std::string s = "model M A a";
    for (int i = 0; i < 50000; ++i) s += "(b";
    for (int i = 0; i < 50000; ++i) s += ")";
    return s + "; end M;";
  }());
  inputs.emplace_back("deep_classes.mbs", [] {
    std::string s;
    for (int i = 0; i < 20000; ++i) s += "package P" + std::to_string(i) + " ";
    for (int i = 20000; i-- > 0;) s += "end P" + std::to_string(i) + "; ";
    return s;
  }());
  inputs.emplace_back("nul.mbs", std::string("model M\0 end M;", 15));
  inputs.emplace_back("self_extends.mbs", "model M extends M; end M;");
  // beyond the limit of component instances: refused before any element is made
  inputs.emplace_back("huge_array.mbs",
                      "model M Real x[100000, 100000]; equation der(x[1, 1]) = 1; end M;");
  inputs.emplace_back("self_component.mbs", "model M M m; end M;");
  for (const auto& [name, text] : inputs) {
    SCOPED_TRACE(name);
    std::string path = dir + name;
    std::ofstream(path, std::ios::binary) << text;
    mbs::clitest::Result r = mbsc("'" + path + "'");
    EXPECT_EQ(r.code, 1) << r.err.substr(0, 2000);
    EXPECT_NE(r.err.find("error:"), std::string::npos) << r.err.substr(0, 2000);
    EXPECT_LT(r.err.size(), 200000u);
  }
}

}  // namespace
