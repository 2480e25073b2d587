// Small result files are replaced whole or not at all (runtime/io/AtomicFile.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime/io/AtomicFile.h"

namespace mbs::rt {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("mbs_atomic_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t entries(const fs::path& d) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d)) ++n;
  return n;
}

TEST(AtomicFile, ReplacesTheWholeFileAndLeavesNoTemporaryFile) {
  const fs::path d = fresh_dir("replace");
  const fs::path p = d / "M.mtx";
  write_file_atomically(p.string(), std::string(100000, 'a'));
  write_file_atomically(p.string(), "short\n");
  EXPECT_EQ(read(p), "short\n");
  EXPECT_EQ(entries(d), 1u);
  fs::remove_all(d);
}

TEST(AtomicFile, AFailureNamesThePathAndKeepsWhatWasThere) {
  const fs::path d = fresh_dir("failure");
  EXPECT_THROW(write_file_atomically((d / "no" / "dir.txt").string(), "x"), std::runtime_error);
  // the target is a non-empty directory: rename fails, the directory and its file stay
  const fs::path target = d / "target";
  fs::create_directories(target);
  std::ofstream(target / "kept.txt") << "kept";
  try {
    write_file_atomically(target.string(), "new");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(target.string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(read(target / "kept.txt"), "kept");
  EXPECT_EQ(entries(d), 1u);  // no temporary file left behind
  fs::remove_all(d);
}

TEST(AtomicFile, ConcurrentWritersLeaveOneWholeVersion) {
  const fs::path d = fresh_dir("concurrent");
  const fs::path p = d / "stats.csv";
  const std::string a(50000, 'a'), b(70000, 'b');
  std::vector<std::thread> writers;
  for (const std::string* s : {&a, &b})
    writers.emplace_back([&, s] {
      for (int i = 0; i < 50; ++i) write_file_atomically(p.string(), *s);
    });
  for (int i = 0; i < 200; ++i) {  // a reader sees one version or the other, never a mixture
    const std::string seen = read(p);
    EXPECT_TRUE(seen.empty() || seen == a || seen == b) << seen.size();
  }
  for (auto& w : writers) w.join();
  const std::string last = read(p);
  EXPECT_TRUE(last == a || last == b);
  EXPECT_EQ(entries(d), 1u);
  fs::remove_all(d);
}

}  // namespace
}  // namespace mbs::rt
