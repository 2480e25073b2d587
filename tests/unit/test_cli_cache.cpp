// The object cache and the model cache through mbsc, in processes of their own: a damaged entry
// (flipped bits, truncated, empty, foreign, random, a directory) never crashes or changes a
// result; mbsc warns, recompiles, writes the same CSV as without the cache and replaces the entry.
// Two or more mbsc processes compiling the same model into one empty cache all succeed and leave
// whole entries. The library-level tests of the same: tests/unit/test_codegen_cache.cpp.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace {

namespace fs = std::filesystem;

constexpr size_t kHeaderBytes = 88;  // compiler/codegen/ObjectCache.h

using mbs::clitest::Result;

std::string slurp(const fs::path& path) {
  return mbs::clitest::slurp(path.string());
}

void spit(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

std::vector<fs::path> files_in(const fs::path& dir, const std::string& suffix = "") {
  std::vector<fs::path> files;
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (suffix.empty() || e.path().extension() == suffix) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

// Object entries are only read when the whole model is not in the model cache.
void forget_models(const fs::path& cache) {
  for (const fs::path& p : files_in(cache, ".model")) fs::remove(p);
}

class CliCache : public ::testing::Test {
 protected:
  fs::path base;  // this test's scratch directory
  fs::path cache;

  void SetUp() override {
    base = fs::path(testing::TempDir()) /
           ("mbs_cli_cache_" + std::to_string(::getpid()) + "_" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(base);
    fs::create_directories(base);
    cache = base / "cache";
  }
  void TearDown() override { fs::remove_all(base); }

  // A shell command that runs mbsc on `model` with the cache in `cache_dir` ("off": none),
  // writing the result to `csv`, stdout and stderr to `tag`.out and `tag`.err.
  std::string command(const std::string& model, const fs::path& cache_dir, const fs::path& csv,
                      const std::string& tag) const {
    return std::string("cd '") + MBS_SOURCE_DIR + "' && MBS_CACHE_DIR='" + cache_dir.string() +
           "' '" + MBS_MBSC_PATH + "' " + model + " --simulate --t-end 1 --step 1e-3 --output '" +
           csv.string() + "' >'" + (base / (tag + ".out")).string() + "' 2>'" +
           (base / (tag + ".err")).string() + "'";
  }

  Result mbsc(const std::string& model, const fs::path& cache_dir, const fs::path& csv) {
    return mbs::clitest::mbsc(
        model + " --simulate --t-end 1 --step 1e-3 --output '" + csv.string() + "'",
        "MBS_CACHE_DIR='" + cache_dir.string() + "' ");
  }
};

constexpr const char* kModel = "examples/pendulum.mbs";

TEST_F(CliCache, DamagedEntriesAreRecompiledWithAWarningAndTheSameResult) {
  // the result without the cache, then a cache filled by a first run
  Result ref = mbsc(kModel, "off", base / "ref.csv");
  ASSERT_EQ(ref.code, 0) << ref.err;
  const std::string expected_csv = slurp(base / "ref.csv");
  ASSERT_GT(expected_csv.size(), 1000u);
  Result fill = mbsc(kModel, cache, base / "fill.csv");
  ASSERT_EQ(fill.code, 0) << fill.err;
  EXPECT_TRUE(slurp(base / "fill.csv") == expected_csv);
  const std::vector<fs::path> entries = files_in(cache);
  ASSERT_GE(files_in(cache, ".o").size(), 1u);
  ASSERT_EQ(files_in(cache, ".model").size(), 1u);
  // another model's entry, to copy under this one's name
  fs::path other_cache = base / "other";
  ASSERT_EQ(mbsc("examples/mass_spring_damper.mbs", other_cache, base / "other.csv").code, 0);
  ASSERT_GE(files_in(other_cache).size(), 1u);
  const std::string foreign = slurp(files_in(other_cache)[0]);

  for (const fs::path& entry : entries) {
    const std::string good = slurp(entry);
    const size_t n = good.size();
    ASSERT_GT(n, kHeaderBytes);
    auto flip = [&](size_t at, int bit) {
      std::string s = good;
      s[at] = static_cast<char>(s[at] ^ (1 << bit));
      return s;
    };
    std::string random(n, '\0');
    for (size_t i = 0; i < n; ++i) random[i] = static_cast<char>((i * 2654435761u) >> 11);
    const std::vector<std::pair<std::string, std::string>> damages = {
        {"bit 0 of the header", flip(0, 0)},
        {"a bit in the key", flip(31, 5)},
        {"a bit in the checksum", flip(80, 7)},
        {"first byte of the object", flip(kHeaderBytes, 0)},
        {"a bit in the middle", flip(kHeaderBytes + (n - kHeaderBytes) / 2, 3)},
        {"a bit in the last quarter", flip(n - (n - kHeaderBytes) / 4, 6)},
        {"the last bit", flip(n - 1, 7)},
        {"truncated to 0 bytes", ""},
        {"truncated to half", good.substr(0, n / 2)},
        {"truncated to the header", good.substr(0, kHeaderBytes)},
        {"foreign entry", foreign},
        {"random bytes", random},
    };
    for (const auto& [what, bytes] : damages) {
      SCOPED_TRACE(entry.filename().string() + ": " + what);
      const bool model = entry.extension() == ".model";
      if (!model) forget_models(cache);
      spit(entry, bytes);
      fs::remove(base / "run.csv");
      Result r = mbsc(kModel, cache, base / "run.csv");
      EXPECT_EQ(r.code, 0) << r.err;
      const std::string kind = model ? "model" : "object";
      EXPECT_NE(
          r.err.find("warning: " + kind + " cache entry '" + entry.string() + "' was damaged ("),
          std::string::npos)
          << r.err;
      EXPECT_NE(r.err.find(model ? "); deleted and compiled afresh" : "); deleted and recompiled"),
                std::string::npos)
          << r.err;
      // bitwise the uncached result; the entry whole again, and nothing else there
      EXPECT_TRUE(slurp(base / "run.csv") == expected_csv);
      EXPECT_TRUE(slurp(entry) == good);
      EXPECT_EQ(files_in(cache), entries);
    }
  }
  // the repaired cache is used without a word
  Result again = mbsc(kModel, cache, base / "again.csv");
  EXPECT_EQ(again.code, 0);
  EXPECT_EQ(again.err.find("warning"), std::string::npos) << again.err;
  EXPECT_TRUE(slurp(base / "again.csv") == expected_csv);
}

TEST_F(CliCache, AnEntryThatCannotBeDeletedIsReportedAndCompiledAround) {
  Result ref = mbsc(kModel, "off", base / "ref.csv");
  ASSERT_EQ(ref.code, 0) << ref.err;
  ASSERT_EQ(mbsc(kModel, cache, base / "fill.csv").code, 0);
  const std::vector<fs::path> entries = files_in(cache);
  for (const char* kind : {"object", "model"}) {
    SCOPED_TRACE(kind);
    const bool model = std::string(kind) == "model";
    const std::vector<fs::path> of_kind = files_in(cache, model ? ".model" : ".o");
    ASSERT_GE(of_kind.size(), 1u);
    const fs::path entry = of_kind[0];
    forget_models(cache);
    fs::remove(entry);
    fs::create_directories(entry / "not ours");
    Result r = mbsc(kModel, cache, base / "run.csv");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("warning: " + std::string(kind) + " cache entry '" + entry.string() +
                         "' is damaged (a directory, not a file) and cannot be deleted ("),
              std::string::npos)
        << r.err;
    EXPECT_TRUE(slurp(base / "run.csv") == slurp(base / "ref.csv"));
    EXPECT_TRUE(fs::is_directory(entry / "not ours"));
    EXPECT_EQ(files_in(cache).size(), entries.size());  // no temporary file left
    fs::remove_all(entry);
    forget_models(cache);
    ASSERT_EQ(mbsc(kModel, cache, base / "fill.csv").code, 0);  // whole again
    EXPECT_EQ(files_in(cache), entries);
  }
}

TEST_F(CliCache, ProcessesCompilingTheSameModelAtOnceAllSucceed) {
  Result ref = mbsc(kModel, "off", base / "ref.csv");
  ASSERT_EQ(ref.code, 0) << ref.err;
  const std::string expected_csv = slurp(base / "ref.csv");
  // the entries one process leaves
  ASSERT_EQ(mbsc(kModel, base / "sequential", base / "seq.csv").code, 0);
  std::vector<std::string> expected_entries;
  for (const fs::path& p : files_in(base / "sequential"))
    expected_entries.push_back(p.filename().string() + "\n" + slurp(p));
  ASSERT_GE(expected_entries.size(), 1u);

  constexpr int kProcesses = 4;
  for (int round = 0; round < 5; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    fs::remove_all(cache);
    // all start together, into the same empty cache
    std::string script;
    for (int p = 0; p < kProcesses; ++p) {
      std::string tag = "p" + std::to_string(p);
      script += "(" + command(kModel, cache, base / (tag + ".csv"), tag) + "; echo $? >'" +
                (base / (tag + ".rc")).string() + "') & ";
    }
    script += "wait";
    ASSERT_EQ(std::system(script.c_str()), 0);
    for (int p = 0; p < kProcesses; ++p) {
      std::string tag = "p" + std::to_string(p);
      SCOPED_TRACE(tag);
      EXPECT_EQ(slurp(base / (tag + ".rc")), "0\n") << slurp(base / (tag + ".err"));
      EXPECT_EQ(slurp(base / (tag + ".err")).find("warning"), std::string::npos)
          << slurp(base / (tag + ".err"));
      EXPECT_TRUE(slurp(base / (tag + ".csv")) == expected_csv);
    }
    // the same whole entries as one process leaves, and no temporary file
    std::vector<std::string> got;
    for (const fs::path& p : files_in(cache))
      got.push_back(p.filename().string() + "\n" + slurp(p));
    EXPECT_TRUE(got == expected_entries) << got.size() << " entries";
  }
}

}  // namespace
