// The .fmu file: a zip archive (libzip), written atomically -- a failed export leaves an existing
// file as it was.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace mbs::fmu {

struct ArchiveEntry {
  std::string name;   // path inside the archive, '/'-separated ("binaries/linux64/M.so")
  std::string bytes;  // content
};

// Writes `entries` (deflated) to `path` through a temporary file beside it. Returns "" or why not.
std::string write_archive(const std::string& path, const std::vector<ArchiveEntry>& entries,
                          size_t* bytes = nullptr);

// Reads every file of the archive at `path` (directories skipped). Returns "" or why not.
std::string read_archive(const std::string& path, std::vector<ArchiveEntry>& entries);

}  // namespace mbs::fmu
