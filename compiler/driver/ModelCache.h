// The model cache: a whole CompiledModel on disk, found from the compiler's inputs before any
// pass runs, so that compiling a model again parses, flattens and generates nothing.
//
// The key hashes everything the compile depends on that is known before it starts: the text and
// path of the main file, the model's name, the options that change the result (CompileOptions),
// every --set and --start value, the library path, the compiler itself (the identity of the
// running executable: its path, size and modification time) and the code generator (LLVM
// version, host CPU and features). What is only known after parsing — which library files the
// model uses — is in the entry: every library file the compile looked for, with the BLAKE3 of
// its text if it was there, and "absent" if it was not. A lookup checks each of them again, so
// an edited library file, or a new file that would now be found in an earlier directory of the
// path, is a miss.
//
// An entry is a verified cache entry of compiler/codegen/ObjectCache.h (magic, key, length,
// checksum), `<dir>/<key>.model`, beside the object files; its payload holds that file list, the
// warnings the compile printed (printed again on a hit), the kernel sizes, the model image
// (runtime/model/ModelImage.h), the notes printed only with -v (printed again on a hit with -v)
// and the kernels' object files. A damaged entry is reported,
// deleted and compiled around, as object cache entries are.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/ObjectCache.h"
#include "compiler/driver/Compile.h"

namespace mbs {

constexpr const char* kModelCacheFormat = "mbs-model-cache-2";

// The key of a compile of `main_text` with `options` (options.emit must be empty).
codegen::CacheKey model_cache_key(const CompileOptions& options, const std::string& main_text);

// What a successful compile leaves in the cache.
struct CachedCompile {
  std::shared_ptr<const rt::CompiledModel> model;
  std::string warnings;  // the diagnostics as printed
  std::string notes;     // those printed only with -v (shown_only_when_verbose)
  std::vector<std::string> diagnostic_kinds;
  std::vector<CompileResult::KernelSize> kernel_sizes;
  std::vector<std::string>
      objects;  // read: the kernels' object files (CompileResult::object_files)
  std::vector<std::string> library_files;  // read: the library files the compile read
};

// A library file the compile looked for: its path, and the BLAKE3 of its text when it was found.
struct LibraryProbe {
  std::string path;
  bool found = false;
  std::string text_hash;  // 64 hex digits ("" when not found)
};

// The hash of a text (codegen::cache_key of it, as 64 hex digits).
std::string text_hash(const std::string& text);

struct ModelCacheRead {
  CachedCompile hit;         // hit.model null: no usable entry
  std::string damage;        // why the entry at the path was unusable (then deleted); "" if none
  std::string delete_error;  // "" when a damaged entry was deleted, else why it could not be
};

// Looks the key up in `dir`: a verified entry whose library files are all as recorded, with its
// kernels linked into a new JIT.
ModelCacheRead read_model_cache(const std::string& dir, const codegen::CacheKey& key);

// Stores a compile (best effort: returns "" or why it failed).
std::string write_model_cache(const std::string& dir, const codegen::CacheKey& key,
                              const std::vector<LibraryProbe>& probes, const CachedCompile& compile,
                              const std::vector<std::string>& objects);

}  // namespace mbs
