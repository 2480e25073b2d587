// Small result files are replaced whole or not at all (runtime/io/AtomicFile.h).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime/io/AtomicFile.h"
#include "runtime/io/CsvWriter.h"
#include "runtime/io/InputFile.h"

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

// Issue 36: `--stats-csv /dev/null` replaced the system's /dev/null by a regular file (temporary
// file and rename). A path that is not a regular file is written in place, never replaced. The
// device is reached through a link in a temporary folder: the old code replaced the link (and
// left /dev/null alone), the new one writes into /dev/null and keeps the link.
TEST(AtomicFile, ADeviceIsWrittenInPlaceNeverReplaced) {
  const fs::path d = fresh_dir("device");
  const fs::path link = d / "null";
  fs::create_symlink("/dev/null", link);
  write_file_atomically(link.string(), "statistics\n");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  const std::string names[] = {"t"};
  { CsvWriter w(link.string(), names, std::chrono::milliseconds(0)); }
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(entries(d), 1u);  // no temporary file left beside it
  fs::remove_all(d);
}

TEST(AtomicFile, AFifoIsWrittenInPlaceAndOneWithoutReaderIsAnError) {
  const fs::path d = fresh_dir("fifo");
  const fs::path fifo = d / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = read(fifo); });
  // the reader opens the FIFO before the writer does: wait until it is there
  for (int i = 0; i < 200; ++i) {
    try {
      write_file_atomically(fifo.string(), "abc\n");
      break;
    } catch (const std::runtime_error& e) {
      ASSERT_NE(std::string(e.what()).find("no process reads"), std::string::npos) << e.what();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  reader.join();
  EXPECT_EQ(got, "abc\n");
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  // nobody reads it now: an error, not a hang
  try {
    write_file_atomically(fifo.string(), "abc\n");
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("a FIFO that no process reads"), std::string::npos)
        << e.what();
  }
  fs::remove_all(d);
}

TEST(AtomicFile, ADirectoryOrSocketIsRefusedAndALinkKeepsItsPlace) {
  const fs::path d = fresh_dir("refused");
  EXPECT_THROW(write_file_atomically(d.string(), "x"), std::runtime_error);
  try {
    output_target(d.string());
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("it is a directory"), std::string::npos) << e.what();
  }
  const fs::path sock = d / "s";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_THROW(write_file_atomically(sock.string(), "x"), std::runtime_error);
  ::close(fd);
  // a link to a regular file: the file gets the new content, the link stays a link
  const fs::path file = d / "data.txt", link = d / "link.txt";
  write_file_atomically(file.string(), "old");
  fs::create_symlink(file, link);
  write_file_atomically(link.string(), "new");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read(file), "new");
  fs::remove_all(d);
}

// Reading is bounded: /dev/zero was read without end, a FIFO waited for a writer forever.
TEST(InputFile, DevicesFifosLargeAndGrowingFilesAreRefused) {
  std::string why;
  EXPECT_FALSE(read_input_file("/dev/zero", kSourceFileLimit, "model file", why));
  EXPECT_EQ(why, "it is a character device, not a regular file");
  const fs::path d = fresh_dir("input");
  const fs::path fifo = d / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(read_input_file(fifo.string(), kSourceFileLimit, "model file", why));
  EXPECT_EQ(why, "it is a FIFO, not a regular file");
  EXPECT_FALSE(read_input_file(d.string(), kSourceFileLimit, "model file", why));
  EXPECT_EQ(why, "it is a directory, not a regular file");
  const fs::path big = d / "big.mbs";
  write_file_atomically(big.string(), std::string(2000, 'x'));
  EXPECT_FALSE(read_input_file(big.string(), 1000, "model file", why));
  EXPECT_EQ(why, "it is 2000 bytes, above the limit of 1000 bytes for a model file");
  EXPECT_EQ(read_input_file(big.string(), 2000, "model file", why).value_or(""),
            std::string(2000, 'x'));
  // a file with more bytes than it had when opened: /proc's files say they have none
  EXPECT_FALSE(read_input_file("/proc/self/status", kSourceFileLimit, "model file", why));
  EXPECT_NE(why.find("it grew while it was read"), std::string::npos) << why;
  EXPECT_EQ(
      read_input_file("/proc/self/status", kSourceFileLimit, "model file", why, true).value_or("?"),
      "");  // a snapshot: what was there when it was opened
  fs::remove_all(d);
}

}  // namespace
}  // namespace mbs::rt
