// The .fmu zip archive (Archive.h), with libzip.
#include "tools/fmu/Archive.h"

#include <unistd.h>
#include <zip.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <system_error>

#include "runtime/io/AtomicFile.h"

namespace mbs::fmu {

namespace {

std::string zip_error_text(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string text = zip_error_strerror(&e);
  zip_error_fini(&e);
  return text;
}

}  // namespace

std::string write_archive(const std::string& path, const std::vector<ArchiveEntry>& entries,
                          size_t* bytes) {
  namespace fs = std::filesystem;
  // a device or FIFO is written in place, never replaced (runtime/io/AtomicFile.h)
  rt::OutputTarget target;
  try {
    target = rt::output_target(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  const std::string tmp = rt::temporary_for(target);
  std::error_code ec;
  fs::remove(tmp, ec);
  int code = 0;
  zip_t* z = zip_open(tmp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  if (z == nullptr) return "cannot create " + tmp + ": " + zip_error_text(code);
  auto fail = [&](const std::string& what) {
    zip_discard(z);
    fs::remove(tmp, ec);
    return what;
  };
  for (const ArchiveEntry& e : entries) {
    // libzip reads the bytes at zip_close(): `entries` outlives it
    zip_source_t* src = zip_source_buffer(z, e.bytes.data(), e.bytes.size(), 0);
    if (src == nullptr) return fail(std::string("libzip: ") + zip_strerror(z));
    const zip_int64_t index = zip_file_add(z, e.name.c_str(), src, ZIP_FL_ENC_UTF_8);
    if (index < 0) {
      zip_source_free(src);
      return fail("cannot add " + e.name + ": " + zip_strerror(z));
    }
    zip_set_file_compression(z, static_cast<zip_uint64_t>(index), ZIP_CM_DEFLATE, 0);
  }
  if (zip_close(z) != 0) {
    std::string why = zip_strerror(z);
    return fail("cannot write " + path + ": " + why);
  }
  if (bytes != nullptr) *bytes = static_cast<size_t>(fs::file_size(tmp, ec));
  try {
    rt::commit_temporary(tmp, target, path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return {};
}

std::string read_archive(const std::string& path, std::vector<ArchiveEntry>& entries) {
  entries.clear();
  int code = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &code);
  if (z == nullptr) return "cannot open " + path + ": " + zip_error_text(code);
  std::unique_ptr<zip_t, int (*)(zip_t*)> owner(z, zip_close);
  const zip_int64_t n = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    if (zip_stat_index(z, static_cast<zip_uint64_t>(i), 0, &st) != 0) return zip_strerror(z);
    std::string name = st.name;
    if (!name.empty() && name.back() == '/') continue;
    zip_file_t* f = zip_fopen_index(z, static_cast<zip_uint64_t>(i), 0);
    if (f == nullptr) return "cannot read " + name + ": " + zip_strerror(z);
    std::string bytes(static_cast<size_t>(st.size), '\0');
    const zip_int64_t got = zip_fread(f, bytes.data(), st.size);
    zip_fclose(f);
    if (got < 0 || static_cast<zip_uint64_t>(got) != st.size) return "cannot read " + name;
    entries.push_back({std::move(name), std::move(bytes)});
  }
  return {};
}

}  // namespace mbs::fmu
