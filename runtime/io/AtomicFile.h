// Small result files (matrices, name lists, statistics) are written whole or not at all: into a
// temporary file beside the target, which is then renamed over it. A run that is killed, or a
// disk that fills up, leaves either the previous file or the complete new one, never a part.
//
// A path that is not a regular file is never replaced (issue 36): a character device or a FIFO
// (`/dev/null`, `/dev/stdout`, a named pipe) is written in place, and so is any path under /dev
// or /proc; a directory, a block device or a socket is refused with a message. A symbolic link to
// a regular file is followed: the file it names is replaced, the link stays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mbs::rt {

// Where and how output for `path` goes.
struct OutputTarget {
  std::string path;       // the file to replace or write (a link followed)
  bool in_place = false;  // write into it (a device or FIFO); else replace it by a rename
};

// Classifies `path` for writing. Throws std::runtime_error naming the path for a directory, a
// block device or a socket.
OutputTarget output_target(const std::string& path);

// Opens a target that is written in place, for appending, without blocking on a FIFO that no
// process reads (that is an error, not a hang). Throws std::runtime_error naming the path.
int open_in_place(const std::string& path);

// A temporary file name for output that will become `target`: beside it when it is replaced (one
// file system for the rename), in the temporary directory when it is written in place.
std::string temporary_for(const OutputTarget& target);

// Moves the complete temporary file `tmp` to the target (rename, or copy in place); `tmp` is
// removed either way. Throws std::runtime_error naming `shown` (the path the user gave).
void commit_temporary(const std::string& tmp, const OutputTarget& target, const std::string& shown);

// std::runtime_error "WHAT 'PATH': the reason of errno `err`", the one form of every writer's
// I/O error.
std::runtime_error io_error(std::string_view what, const std::string& path, int err);

// Writes all `size` bytes to `fd` (at `offset` with pwrite when offset >= 0), again after an
// interrupted write (the SIGINT that stops a run); throws io_error(what, path, errno) otherwise.
void write_fully(int fd, const void* data, size_t size, std::string_view what,
                 const std::string& path, int64_t offset = -1);

// Replaces `path` by a file holding `content` (or writes it in place, as above). Throws
// std::runtime_error naming the path and the reason on failure; the previous file (if any) is
// then untouched and no temporary file remains.
void write_file_atomically(const std::string& path, std::string_view content);

}  // namespace mbs::rt
