// The object cache on disk: entries with a header and a checksum (see ObjectCache.h).
#include "compiler/codegen/ObjectCache.h"

#include <fcntl.h>
#include <llvm/Support/BLAKE3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

namespace mbs::codegen {

namespace {

constexpr char kMagic[8] = {'m', 'b', 's', '-', 'o', 'b', 'j', '\n'};
constexpr size_t kKeyAt = 16, kLengthAt = 48, kChecksumAt = 56;
// An object file larger than this is not one of ours (the largest models make a few MB).
constexpr uint64_t kMaxObjectBytes = uint64_t{1} << 32;

void put_le(std::string& s, size_t at, uint64_t x, int bytes) {
  for (int i = 0; i < bytes; ++i) s[at + i] = static_cast<char>((x >> (8 * i)) & 0xff);
}

uint64_t get_le(std::string_view s, size_t at, int bytes) {
  uint64_t x = 0;
  for (int i = 0; i < bytes; ++i) x |= uint64_t{static_cast<unsigned char>(s[at + i])} << (8 * i);
  return x;
}

llvm::ArrayRef<uint8_t> bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

CacheKey checksum(std::string_view header, std::span<const std::string_view> object) {
  llvm::BLAKE3 h;
  h.update(bytes(header.substr(0, kChecksumAt)));
  for (std::string_view piece : object) h.update(bytes(piece));
  return h.final();
}

CacheKey checksum(std::string_view header, std::string_view object) {
  return checksum(header, std::span<const std::string_view>(&object, 1));
}

// The header of the entry holding the concatenation of `object`.
std::string entry_header(const CacheKey& key, std::span<const std::string_view> object) {
  size_t n = 0;
  for (std::string_view piece : object) n += piece.size();
  std::string header(kCacheHeaderBytes, '\0');
  std::memcpy(header.data(), kMagic, sizeof kMagic);
  put_le(header, 8, kCacheEntryVersion, 4);
  std::memcpy(header.data() + kKeyAt, key.data(), key.size());
  put_le(header, kLengthAt, n, 8);
  CacheKey sum = checksum(header, object);
  std::memcpy(header.data() + kChecksumAt, sum.data(), sum.size());
  return header;
}

bool same(std::string_view s, size_t at, const CacheKey& k) {
  return std::memcmp(s.data() + at, k.data(), k.size()) == 0;
}

// Checks the header of an entry of `key` in a file of `file_bytes`; "" or what is wrong.
std::string check_header(std::string_view header, const CacheKey& key, uint64_t file_bytes) {
  if (file_bytes == 0) return "empty file";
  if (file_bytes < kCacheHeaderBytes)
    return "truncated to " + std::to_string(file_bytes) + " bytes, shorter than its header";
  if (std::memcmp(header.data(), kMagic, sizeof kMagic) != 0) return "not an mbs cache entry";
  uint64_t version = get_le(header, 8, 4);
  if (version != kCacheEntryVersion)
    return "format version " + std::to_string(version) + ", expected " +
           std::to_string(kCacheEntryVersion);
  if (get_le(header, 12, 4) != 0) return "header corrupted";
  if (!same(header, kKeyAt, key)) return "it belongs to another key (copied or renamed)";
  uint64_t n = get_le(header, kLengthAt, 8);
  if (n > kMaxObjectBytes || n + kCacheHeaderBytes != file_bytes)
    return "truncated or extended: " + std::to_string(file_bytes) + " bytes, the header says " +
           std::to_string(n + kCacheHeaderBytes);
  return {};
}

std::string errno_text() {
  return std::strerror(errno);
}

}  // namespace

CacheKey cache_key(std::span<const std::string_view> material) {
  llvm::BLAKE3 h;
  for (std::string_view part : material) {
    std::string length(8, '\0');
    put_le(length, 0, part.size(), 8);
    h.update(bytes(length));
    h.update(bytes(part));
  }
  return h.final();
}

std::string hex(const CacheKey& key) {
  static const char* digits = "0123456789abcdef";
  std::string name;
  for (uint8_t b : key) {
    name += digits[b >> 4];
    name += digits[b & 15];
  }
  return name;
}

std::string cache_entry_path(const std::string& dir, const CacheKey& key, const char* suffix) {
  return dir + "/" + hex(key) + suffix;
}

std::string encode_cache_entry(const CacheKey& key, std::string_view object) {
  std::string entry = entry_header(key, std::span<const std::string_view>(&object, 1));
  entry.append(object);
  return entry;
}

std::string check_cache_entry(std::string_view entry, const CacheKey& key) {
  if (std::string e = check_header(entry, key, entry.size()); !e.empty()) return e;
  if (!same(entry, kChecksumAt, checksum(entry, entry.substr(kCacheHeaderBytes))))
    return "checksum mismatch";
  return {};
}

CacheRead read_cache_entry(const std::string& path, const CacheKey& key) {
  CacheRead r;
  // O_NONBLOCK: a FIFO of this name must not hang the compiler (it is reported as damage below)
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    // no entry; ENOTDIR: the cache directory is not one (so nothing can be cached)
    if (errno != ENOENT && errno != ENOTDIR) r.damage = "cannot be opened: " + errno_text();
    return r;
  }
  struct stat st {};
  auto read_all = [&](char* to, size_t n) {
    while (n > 0) {
      ssize_t got = ::read(fd, to, n);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      to += got;
      n -= static_cast<size_t>(got);
    }
    return true;
  };
  std::string header(kCacheHeaderBytes, '\0');
  if (::fstat(fd, &st) != 0) {
    r.damage = "cannot be examined: " + errno_text();
  } else if (S_ISDIR(st.st_mode)) {
    r.damage = "a directory, not a file";
  } else if (!S_ISREG(st.st_mode)) {
    r.damage = "not a regular file";
  } else if (st.st_size < static_cast<off_t>(kCacheHeaderBytes)) {
    // empty or shorter than a header (reported from the size alone)
    r.damage = check_header(header, key, static_cast<uint64_t>(st.st_size));
  } else if (!read_all(header.data(), header.size())) {
    r.damage = "cannot be read";
  } else if (std::string e = check_header(header, key, static_cast<uint64_t>(st.st_size));
             !e.empty()) {
    r.damage = e;
  } else {
    size_t n = static_cast<size_t>(st.st_size) - kCacheHeaderBytes;
    // aligned for the object file reader, and filled by read(), not mapped: a mapped file that
    // someone truncates meanwhile would be a SIGBUS
    std::unique_ptr<llvm::WritableMemoryBuffer> object =
        llvm::WritableMemoryBuffer::getNewUninitMemBuffer(n, path);
    if (object == nullptr) {
      r.damage = "too large to read";
    } else if (char extra; !read_all(object->getBufferStart(), n) || ::read(fd, &extra, 1) != 0) {
      r.damage = "changed while it was read";
    } else if (!same(header, kChecksumAt,
                     checksum(header, std::string_view(object->getBufferStart(), n)))) {
      r.damage = "checksum mismatch";
    } else {
      r.object = std::move(object);
    }
  }
  ::close(fd);
  return r;
}

std::string write_cache_entry(const std::string& path, const CacheKey& key,
                              std::string_view object) {
  return write_cache_entry(path, key, std::span<const std::string_view>(&object, 1));
}

std::string write_cache_entry(const std::string& path, const CacheKey& key,
                              std::span<const std::string_view> object) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return "cannot create the cache directory: " + ec.message();
  // unique among processes (pid), threads and calls (counter), and hosts sharing the directory
  // over a network file system (random); O_EXCL makes sure of it
  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" +
                    std::to_string(counter.fetch_add(1)) + "-" +
                    std::to_string(std::random_device{}());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return "cannot create '" + tmp + "': " + errno_text();
  // the header, then the pieces as they are (no copy of the whole entry in memory)
  const std::string header = entry_header(key, object);
  std::string error;
  const auto write_all = [&](std::string_view piece) {
    for (size_t done = 0; done < piece.size() && error.empty();) {
      ssize_t put = ::write(fd, piece.data() + done, piece.size() - done);
      if (put < 0 && errno == EINTR) continue;
      if (put <= 0)
        error = "cannot write '" + tmp + "': " + errno_text();
      else
        done += static_cast<size_t>(put);
    }
  };
  write_all(header);
  for (std::string_view piece : object) write_all(piece);
  if (::close(fd) != 0 && error.empty()) error = "cannot write '" + tmp + "': " + errno_text();
  // atomic: a reader opens the old entry or the new one, never a partial file
  if (error.empty() && std::rename(tmp.c_str(), path.c_str()) != 0)
    error = "cannot rename '" + tmp + "': " + errno_text();
  if (!error.empty()) ::unlink(tmp.c_str());
  return error;
}

std::string delete_cache_entry(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
  return ec ? ec.message() : std::string();
}

}  // namespace mbs::codegen
