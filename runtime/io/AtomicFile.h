// Small result files (matrices, name lists, statistics) are written whole or not at all: into a
// temporary file beside the target, which is then renamed over it. A run that is killed, or a
// disk that fills up, leaves either the previous file or the complete new one, never a part.
#pragma once

#include <string>
#include <string_view>

namespace mbs::rt {

// Replaces `path` by a file holding `content`. Throws std::runtime_error naming the path and the
// reason on failure; the previous file (if any) is then untouched and no temporary file remains.
void write_file_atomically(const std::string& path, std::string_view content);

}  // namespace mbs::rt
