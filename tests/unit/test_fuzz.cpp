// The fuzz targets (fuzz/Targets.h) on the seed corpus and on every input that ever made one of
// them fail (fuzz/regressions/<target>/): each file goes through every target. A crash aborts the
// test; the last "fuzz:" line of its output names the input. Built by every preset, so the ci and
// asan presets check the regressions without clang.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/Targets.h"

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Regular files under `dir` (recursively) whose name ends in `ext` ("" for any), sorted.
std::vector<fs::path> files_under(const fs::path& dir, const std::string& ext) {
  std::vector<fs::path> r;
  if (!fs::is_directory(dir)) return r;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::string name = e.path().filename().string();
    if (name.rfind('.', 0) == 0) continue;  // .gitkeep
    if (!ext.empty() && e.path().extension() != ext) continue;
    r.push_back(e.path());
  }
  std::sort(r.begin(), r.end());
  return r;
}

void run_every_target(const std::vector<fs::path>& inputs) {
  for (const fs::path& p : inputs) {
    std::string text = slurp(p);
    for (const auto& t : mbs::fuzz::targets()) {
      std::printf("fuzz: %s %s\n", t.name, p.c_str());
      std::fflush(stdout);
      EXPECT_EQ(t.run(reinterpret_cast<const uint8_t*>(text.data()), text.size()), 0);
    }
  }
}

const fs::path kSource = MBS_SOURCE_DIR;

}  // namespace

// The seed corpus of fuzz/run.sh: examples, the library and the diagnostics tests.
TEST(Fuzz, SeedCorpus) {
  std::vector<fs::path> seeds;
  for (const char* dir : {"examples", "stdlib", "tests/diagnostics"})
    for (auto& p : files_under(kSource / dir, ".mbs")) seeds.push_back(p);
  EXPECT_GT(seeds.size(), 50u);
  run_every_target(seeds);
}

TEST(Fuzz, Regressions) {
  std::vector<fs::path> inputs;
  for (const auto& t : mbs::fuzz::targets()) {
    fs::path dir = kSource / "fuzz/regressions" / t.name;
    EXPECT_TRUE(fs::is_directory(dir)) << dir;
    for (auto& p : files_under(dir, "")) inputs.push_back(p);
  }
  run_every_target(inputs);
}
