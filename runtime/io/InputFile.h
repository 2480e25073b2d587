// Input files are read with bounds (issue 36): a path that is not a regular file (a device such
// as /dev/zero, a FIFO, a directory) is refused instead of read without end or waited on, and so
// is a file above a size limit, or one that grows while it is read. The limits are documented in
// docs/diagnostics.md ("Limits").
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>

namespace mbs::rt {

// Model and library source files (.mbs).
inline constexpr size_t kSourceFileLimit = size_t{64} << 20;  // 64 MiB
// Data files: objective data, trajectories, logged loads, result and study CSVs that are read.
inline constexpr size_t kDataFileLimit = size_t{1} << 30;  // 1 GiB

// The whole file, or nullopt with `why` set to the reason ("it is a FIFO, not a regular file",
// "it is 80.0 MiB, above the limit of 64 MiB for a model file", an errno text). `what` names the
// kind of file in the message ("model file", "data file"). With `snapshot`, a file that grows
// while it is read (a study file another process writes) is read as it was when opened;
// otherwise growth is an error.
std::optional<std::string> read_input_file(const std::string& path, size_t limit,
                                           const std::string& what, std::string& why,
                                           bool snapshot = false);

// As above, throwing std::runtime_error("cannot read <what> '<path>': <why>").
std::string read_input_file_or_throw(const std::string& path, size_t limit, const std::string& what,
                                     bool snapshot = false);

}  // namespace mbs::rt
