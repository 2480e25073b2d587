// Tests of the object cache (compiler/codegen/ObjectCache.h) through the library: every flipped
// bit and every truncation of an entry is detected, foreign entries are refused, an entry that
// passes its checksum but does not link or lacks a kernel is recompiled, concurrent writers leave
// one whole entry, and a cache that cannot be used is no error. The same through mbsc, with
// processes: tests/unit/test_cli_cache.cpp.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "compiler/codegen/Jit.h"
#include "compiler/codegen/ObjectCache.h"

namespace mbs::codegen {
namespace {

namespace fs = std::filesystem;
using sym::Context;
using sym::Expr;
using sym::Op;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

CacheKey key_of(const std::string& text) {
  const std::string_view material[] = {text};
  return cache_key(material);
}

class ObjectCache : public ::testing::Test {
 protected:
  Context cx;
  Expr x, y;
  std::vector<KernelSpec> kernels;  // one module, one entry
  fs::path dir;
  JitOptions options;
  std::vector<double> v = {0.3, 2};

  void SetUp() override {
    x = cx.symbol(cx.new_symbol("x"));
    y = cx.symbol(cx.new_symbol("y"));
    kernels = {{"k", {cx.unary(Op::Sin, cx.mul(x, y)), cx.add(x, cx.num(2))}}};
    dir = fs::path(testing::TempDir()) /
          ("mbs_object_cache_" + std::to_string(::getpid()) + "_" +
           testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    options.cache_dir = dir.string();
  }
  void TearDown() override { fs::remove_all(dir); }

  // Compiles `kernels` with the cache, checks the kernel's results and returns the module.
  std::unique_ptr<JitModule> compile() {
    std::string error;
    auto jit = JitModule::compile(cx, kernels, options, &error);
    EXPECT_NE(jit, nullptr) << error;
    if (jit == nullptr) return jit;
    double out[2] = {0, 0};
    EXPECT_EQ(jit->lookup("k")(v.data(), out), 0);
    EXPECT_EQ(out[0], std::sin(0.6));
    EXPECT_EQ(out[1], 2.3);
    return jit;
  }

  // The one entry, after a first compilation.
  fs::path entry() {
    auto files = files_in(dir);
    EXPECT_EQ(files.size(), 1u);
    return files.empty() ? fs::path() : files[0];
  }
};

// The object files are kept only on request (the model cache stores them); kept, they link
// into a new JIT without compiling and give the same kernel.
TEST_F(ObjectCache, ObjectFilesAreKeptOnRequestAndLoadWithoutCompiling) {
  auto plain = compile();
  EXPECT_TRUE(plain->object_files().empty());
  options.keep_object_files = true;
  auto kept = compile();
  ASSERT_EQ(kept->object_files().size(), 1u);
  EXPECT_EQ(kept->code_symbol("k"), "k");
  std::string error;
  auto loaded = JitModule::load(kept->take_object_files(), {"k"}, &error);
  ASSERT_NE(loaded, nullptr) << error;
  EXPECT_TRUE(kept->object_files().empty());
  double out[2] = {0, 0};
  EXPECT_EQ(loaded->lookup("k")(v.data(), out), 0);
  EXPECT_EQ(out[0], std::sin(0.6));
  EXPECT_EQ(out[1], 2.3);
  EXPECT_EQ(JitModule::load({"not an object"}, {"k"}, &error), nullptr);
  EXPECT_FALSE(error.empty());
}

TEST_F(ObjectCache, EntryIsAHeaderAndTheObjectAndIsReused) {
  auto first = compile();
  EXPECT_EQ(first->cache_hits(), 0u);
  fs::path e = entry();
  std::string bytes = slurp(e);
  ASSERT_GT(bytes.size(), kCacheHeaderBytes);
  EXPECT_EQ(bytes.substr(0, 8), "mbs-obj\n");
  EXPECT_EQ(e.extension(), ".o");
  EXPECT_EQ(e.stem().string().size(), 64u);  // the whole key, in hex
  // the object file follows the header (an ELF file on Linux)
  EXPECT_EQ(bytes.substr(kCacheHeaderBytes, 4),
            "\x7f"
            "ELF");
  auto second = compile();
  EXPECT_EQ(second->cache_hits(), 1u);
  EXPECT_TRUE(second->cache_damage().empty());
}

TEST_F(ObjectCache, EveryFlippedBitAndEveryTruncationIsDetected) {
  compile();
  std::string entry_bytes = slurp(entry());
  CacheKey key = key_of("a key");
  std::string good = encode_cache_entry(key, entry_bytes.substr(kCacheHeaderBytes));
  ASSERT_EQ(check_cache_entry(good, key), "");
  size_t missed = 0;
  for (size_t bit = 0; bit < 8 * good.size(); ++bit) {
    std::string bad = good;
    bad[bit / 8] = static_cast<char>(bad[bit / 8] ^ (1 << (bit % 8)));
    missed += check_cache_entry(bad, key).empty();
  }
  EXPECT_EQ(missed, 0u) << "of " << 8 * good.size() << " single-bit flips";
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_NE(check_cache_entry(std::string_view(good).substr(0, n), key), "") << n;
  EXPECT_NE(check_cache_entry(good + '\0', key), "");
  EXPECT_EQ(check_cache_entry("", key), "empty file");
  // a whole entry of another key: copied or renamed
  EXPECT_EQ(check_cache_entry(good, key_of("another key")),
            "it belongs to another key (copied or renamed)");
  // key material is hashed part by part
  const std::string_view ab_c[] = {"ab", "c"}, a_bc[] = {"a", "bc"};
  EXPECT_NE(cache_key(ab_c), cache_key(a_bc));
}

TEST_F(ObjectCache, DamagedEntriesAreDeletedRecompiledAndReplaced) {
  compile();
  fs::path e = entry();
  const std::string good = slurp(e);
  const size_t n = good.size();
  auto flip = [&](size_t at) {
    std::string s = good;
    s[at] = static_cast<char>(s[at] ^ 0x10);
    return s;
  };
  std::string random(n, '\0');
  for (size_t i = 0; i < n; ++i) random[i] = static_cast<char>((i * 2654435761u) >> 13);
  // another entry, valid in itself: the same kernels at another level
  std::string foreign;
  {
    JitOptions o = options;
    o.opt_level = 1;
    o.cache_dir = (dir / "other").string();
    std::string error;
    ASSERT_NE(JitModule::compile(cx, kernels, o, &error), nullptr) << error;
    foreign = slurp(files_in(dir / "other").at(0));
    fs::remove_all(dir / "other");
  }
  const std::vector<std::pair<std::string, std::string>> damages = {
      {"bit in the magic", flip(1)},
      {"bit in the version", flip(8)},
      {"bit in the key", flip(20)},
      {"bit in the length", flip(49)},
      {"bit in the checksum", flip(70)},
      {"bit at the start of the object", flip(kCacheHeaderBytes)},
      {"bit in the middle of the object", flip(kCacheHeaderBytes + (n - kCacheHeaderBytes) / 2)},
      {"bit in the last byte", flip(n - 1)},
      {"empty", ""},
      {"half", good.substr(0, n / 2)},
      {"header only", good.substr(0, kCacheHeaderBytes)},
      {"one byte short", good.substr(0, n - 1)},
      {"one byte more", good + "x"},
      {"foreign entry", foreign},
      {"random bytes", random},
      {"a bare object file (format 1)", good.substr(kCacheHeaderBytes)},
  };
  for (const auto& [what, bytes] : damages) {
    SCOPED_TRACE(what);
    spit(e, bytes);
    auto jit = compile();
    ASSERT_NE(jit, nullptr);
    EXPECT_EQ(jit->cache_hits(), 0u);
    ASSERT_EQ(jit->cache_damage().size(), 1u);
    EXPECT_EQ(jit->cache_damage()[0].path, e.string());
    EXPECT_NE(jit->cache_damage()[0].reason, "");
    EXPECT_EQ(jit->cache_damage()[0].delete_error, "");
    EXPECT_TRUE(slurp(e) == good);        // replaced by a whole entry
    EXPECT_EQ(files_in(dir).size(), 1u);  // and no temporary file left
    auto again = compile();
    EXPECT_EQ(again->cache_hits(), 1u);
    EXPECT_TRUE(again->cache_damage().empty());
  }
}

TEST_F(ObjectCache, AnEntryThatDoesNotLinkOrLacksAKernelIsRecompiled) {
  compile();
  fs::path e = entry();
  const std::string good = slurp(e);
  CacheKey key;
  {
    // the key is the file name; the checksum is right, so only linking can tell
    std::string hex = e.stem().string();
    for (size_t i = 0; i < key.size(); ++i) key[i] = std::stoi(hex.substr(2 * i, 2), nullptr, 16);
  }
  std::string other_object;  // a valid object file without the kernel "k"
  {
    JitOptions o;
    o.cache_dir = (dir / "other").string();
    const KernelSpec other[] = {{"other", {cx.mul(x, x)}}};
    std::string error;
    ASSERT_NE(JitModule::compile(cx, other, o, &error), nullptr) << error;
    other_object = slurp(files_in(dir / "other").at(0)).substr(kCacheHeaderBytes);
    fs::remove_all(dir / "other");
  }
  for (const std::string& payload : {std::string("not an object file"), other_object}) {
    SCOPED_TRACE(payload.substr(0, 20));
    spit(e, encode_cache_entry(key, payload));
    ASSERT_EQ(check_cache_entry(slurp(e), key), "");
    auto jit = compile();
    ASSERT_NE(jit, nullptr);
    EXPECT_EQ(jit->cache_hits(), 0u);
    ASSERT_EQ(jit->cache_damage().size(), 1u);
    EXPECT_NE(jit->cache_damage()[0].reason.find("does not link"), std::string::npos)
        << jit->cache_damage()[0].reason;
    EXPECT_TRUE(slurp(e) == good);
    EXPECT_EQ(compile()->cache_hits(), 1u);
  }
}

TEST_F(ObjectCache, ADirectoryOrAFifoInPlaceOfAnEntry) {
  compile();
  fs::path e = entry();
  const std::string good = slurp(e);
  // an empty directory is deleted and the entry written again
  fs::remove(e);
  fs::create_directory(e);
  {
    auto jit = compile();
    ASSERT_EQ(jit->cache_damage().size(), 1u);
    EXPECT_EQ(jit->cache_damage()[0].reason, "a directory, not a file");
    EXPECT_EQ(jit->cache_damage()[0].delete_error, "");
    EXPECT_TRUE(slurp(e) == good);
  }
  // one that is not empty is left alone (it is not ours to delete): compiled every time
  fs::remove(e);
  fs::create_directories(e / "sub");
  for (int run = 0; run < 2; ++run) {
    auto jit = compile();
    ASSERT_EQ(jit->cache_damage().size(), 1u);
    EXPECT_NE(jit->cache_damage()[0].delete_error, "");
    EXPECT_TRUE(fs::is_directory(e / "sub"));
    EXPECT_EQ(files_in(dir).size(), 1u);  // no temporary file left
  }
  fs::remove_all(e);
  // a FIFO must not block the reader
  ASSERT_EQ(::mkfifo(e.c_str(), 0600), 0);
  {
    auto jit = compile();
    ASSERT_EQ(jit->cache_damage().size(), 1u);
    EXPECT_EQ(jit->cache_damage()[0].reason, "not a regular file");
    EXPECT_TRUE(slurp(e) == good);
  }
}

TEST_F(ObjectCache, ACacheThatCannotBeWrittenIsNoError) {
  // a directory below a regular file cannot be created (whoever runs the test, root included)
  spit(dir.string() + ".file", "x");
  options.cache_dir = dir.string() + ".file/cache";
  for (int run = 0; run < 2; ++run) {
    auto jit = compile();
    ASSERT_NE(jit, nullptr);
    EXPECT_EQ(jit->cache_hits(), 0u);
    EXPECT_TRUE(jit->cache_damage().empty());
  }
  fs::remove(dir.string() + ".file");
}

TEST_F(ObjectCache, ConcurrentWritersAndReadersSeeWholeEntriesOnly) {
  // writers replace the entry with whole entries of two different objects while readers read it:
  // a reader finds no entry or a whole one, never a partial one; no temporary file remains
  fs::create_directories(dir);
  CacheKey key = key_of("concurrent");
  std::string path = cache_entry_path(dir.string(), key);
  const std::string objects[] = {std::string(300000, 'a'), std::string(200000, 'b')};
  ASSERT_EQ(write_cache_entry(path, key, objects[0]), "");
  std::atomic<int> damaged{0}, whole{0}, failed_writes{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        if (t % 2 == 0) {
          failed_writes += !write_cache_entry(path, key, objects[(i + t / 2) % 2]).empty();
        } else {
          CacheRead r = read_cache_entry(path, key);
          damaged += !r.damage.empty();
          if (r.object == nullptr) continue;
          ++whole;
          std::string_view got(r.object->getBufferStart(), r.object->getBufferSize());
          EXPECT_TRUE(got == objects[0] || got == objects[1]);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed_writes, 0);
  EXPECT_EQ(damaged, 0);
  EXPECT_GT(whole, 0);
  EXPECT_EQ(files_in(dir), std::vector<fs::path>{fs::path(path)});
  EXPECT_EQ(check_cache_entry(slurp(path), key), "");
}

}  // namespace
}  // namespace mbs::codegen
