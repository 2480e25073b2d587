// The object cache on disk (see JitOptions::cache_dir for the API). Its verified entries also hold
// whole compiled models (compiler/driver/ModelCache.h): the payload is then a model, not an
// object file.
//
// An entry is verified, not trusted: it is one file `<dir>/<key>.o`, named by the hex BLAKE3 hash
// of its key material (everything that determines the object file), and laid out as
//   offset  bytes  field
//        0      8  magic "mbs-obj\n"
//        8      4  format version (kCacheEntryVersion), little-endian
//       12      4  zero
//       16     32  the key: BLAKE3 of the key material
//       48      8  n, the length of the object file, little-endian
//       56     32  BLAKE3 of bytes 0..55 and of the object file
//       88      n  the object file
// Before an object reaches LLVM, every field is checked against what the reader expects and the
// checksum is recomputed: a flipped bit anywhere, a truncated or extended file, an entry copied or
// renamed under another key, an empty file or anything else that is not such an entry is damage,
// and is reported as such instead of being linked. Entries are written to a temporary file of a
// unique name and renamed into place, so readers and concurrent writers (parallel studies, two
// processes compiling the same model) see a whole entry or none.
#pragma once

#include <llvm/Support/MemoryBuffer.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace mbs::codegen {

constexpr uint32_t kCacheEntryVersion = 2;  // 1: the bare object file, no header
constexpr size_t kCacheHeaderBytes = 88;

using CacheKey = std::array<uint8_t, 32>;

// The key of a list of strings (each is hashed with its length, so {"ab", "c"} != {"a", "bc"}).
CacheKey cache_key(std::span<const std::string_view> material);

// The 64 lowercase hex digits of a key.
std::string hex(const CacheKey& key);

// `<dir>/<64 hex digits of key><suffix>` (".o": an object file; the model cache of
// compiler/driver/ModelCache uses the same entries for whole models, ".model")
std::string cache_entry_path(const std::string& dir, const CacheKey& key,
                             const char* suffix = ".o");

// The bytes of the entry holding `object` under `key`.
std::string encode_cache_entry(const CacheKey& key, std::string_view object);

// "" when `entry` is a whole entry of `key`, otherwise what is wrong with it (for the user).
std::string check_cache_entry(std::string_view entry, const CacheKey& key);

struct CacheRead {
  std::unique_ptr<llvm::MemoryBuffer> object;  // the verified object file, or null
  std::string damage;  // why the entry at the path cannot be used; "" when there is none
};

// Reads and verifies the entry of `key` at `path`. No entry there: object and damage both empty.
// Reads no more than the header of a file that is not an entry of `key`, so a huge foreign file
// costs nothing.
CacheRead read_cache_entry(const std::string& path, const CacheKey& key);

// Stores `object` as the entry of `key` at `path` (creating its directory): written to a unique
// temporary file beside it, then renamed over `path`. Best effort: returns "" or why it failed,
// and leaves no temporary file behind either way.
std::string write_cache_entry(const std::string& path, const CacheKey& key,
                              std::string_view object);
// The same for an object given in pieces, written one after the other (a whole model's entry:
// no copy of it all in memory).
std::string write_cache_entry(const std::string& path, const CacheKey& key,
                              std::span<const std::string_view> object);

// Deletes whatever is at `path` (an empty directory too). Returns "" or why it could not.
std::string delete_cache_entry(const std::string& path);

}  // namespace mbs::codegen
