// The fuzz targets (fuzz/Targets.h) on the seed corpus and on every input that ever made one of
// them fail (fuzz/regressions/<target>/): each file goes through every target. A crash aborts the
// test; the last "fuzz:" line of its output names the input. Built by every preset, so the ci and
// asan presets check the regressions without clang.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
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
  for (const char* dir : {"examples", "stdlib", "tests/diagnostics", "fuzz/seeds"})
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

// Issue 36: the constructs added since the first reliability pass (functions, events, initial
// equations, comprehensions, inputs; fuzz/seeds/) mutated a few hundred times each, with edits
// that aim at what went wrong before (0/0, free starts, clocks that never tick, sliding switches,
// unknown bases, empty ranges) as well as at random: every target must end each input with a
// result or a diagnostic (a crash aborts the test and the last "fuzz:" line names the input,
// which is then written to the build folder).
TEST(Fuzz, MutatedSeedsOfEveryConstruct) {
  const std::vector<fs::path> seeds = files_under(kSource / "fuzz/seeds", ".mbs");
  ASSERT_GE(seeds.size(), 5u);
  const char* snippets[] = {"0/0",
                            "1/0",
                            "x/x",
                            "fixed = false",
                            "sample(0, -1)",
                            "sample(0, 1e-15)",
                            "for i in 1:0 loop",
                            "extends B;",
                            "end for;",
                            "end when;",
                            "end if;",
                            "reinit(",
                            "pre(",
                            "1e300",
                            "-",
                            "(",
                            ")",
                            "[",
                            "]",
                            ";",
                            "{",
                            "}",
                            ":=",
                            "=",
                            "return;",
                            "while true loop",
                            "input ",
                            "output ",
                            "initial equation\n",
                            "algorithm\n",
                            "when ",
                            "elsewhen ",
                            "noEvent(",
                            "sum(",
                            "size(",
                            "end"};
  std::mt19937 rng(36);
  for (const fs::path& seed : seeds) {
    const std::string original = slurp(seed);
    for (int iteration = 0; iteration < 60; ++iteration) {
      std::string text = original;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        const size_t pos = text.empty() ? 0 : rng() % text.size();
        switch (rng() % 4) {
          case 0:  // an aimed snippet
            text.insert(pos, snippets[rng() % std::size(snippets)]);
            break;
          case 1:  // delete a range
            text.erase(pos, 1 + rng() % 12);
            break;
          case 2: {  // a number replaced
            const size_t d = text.find_first_of("0123456789", pos);
            if (d != std::string::npos) text.replace(d, 1, std::string(rng() % 2 ? "0" : "-3"));
            break;
          }
          default: {  // a line duplicated
            const size_t begin = text.rfind('\n', pos), end = text.find('\n', pos);
            if (begin != std::string::npos && end != std::string::npos)
              text.insert(end, text.substr(begin, end - begin));
            break;
          }
        }
      }
      const fs::path input = fs::temp_directory_path() / "mbs_fuzz_mutant.mbs";
      std::ofstream(input, std::ios::binary) << text;  // kept when a target crashes on it
      for (const auto& t : mbs::fuzz::targets()) {
        std::printf("fuzz: %s %s mutant %d of %s\n", t.name, input.c_str(), iteration,
                    seed.filename().c_str());
        std::fflush(stdout);
        EXPECT_EQ(t.run(reinterpret_cast<const uint8_t*>(text.data()), text.size()), 0);
      }
    }
  }
}
