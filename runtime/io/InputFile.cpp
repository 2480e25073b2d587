#include "runtime/io/InputFile.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mbs::rt {

namespace {

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string size_text(double bytes) {
  if (bytes >= double(size_t{1} << 30)) return fmt::format("{:.1f} GiB", bytes / double(1 << 30));
  if (bytes >= double(size_t{1} << 20)) return fmt::format("{:.1f} MiB", bytes / double(1 << 20));
  return fmt::format("{} bytes", bytes);
}

std::string limit_text(size_t limit) {
  if (limit >= (size_t{1} << 30) && limit % (size_t{1} << 30) == 0)
    return fmt::format("{} GiB", limit >> 30);
  if (limit >= (size_t{1} << 20) && limit % (size_t{1} << 20) == 0)
    return fmt::format("{} MiB", limit >> 20);
  return fmt::format("{} bytes", limit);
}

}  // namespace

std::optional<std::string> read_input_file(const std::string& path, size_t limit,
                                           const std::string& what, std::string& why,
                                           bool snapshot) {
  int fd = -1;
  do {  // O_NONBLOCK: opening a FIFO does not wait for a writer (it is refused below)
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    why = std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    why = std::strerror(errno);
    ::close(fd);
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    why = "it is " + kind_of(st.st_mode) + ", not a regular file";
    ::close(fd);
    return std::nullopt;
  }
  const auto size = static_cast<size_t>(st.st_size);
  if (size > limit) {
    why = fmt::format("it is {}, above the limit of {} for a {}", size_text(double(size)),
                      limit_text(limit), what);
    ::close(fd);
    return std::nullopt;
  }
  std::string text(size + 1, '\0');  // one byte more: tells a file that grew
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) {
      why = std::strerror(errno);
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (got > size) {
    if (!snapshot) {
      why = fmt::format("it grew while it was read (it was {} bytes when opened)", size);
      return std::nullopt;
    }
    got = size;
  }
  text.resize(got);
  return text;
}

std::string read_input_file_or_throw(const std::string& path, size_t limit, const std::string& what,
                                     bool snapshot) {
  std::string why;
  std::optional<std::string> text = read_input_file(path, limit, what, why, snapshot);
  if (!text) throw std::runtime_error("cannot read the " + what + " '" + path + "': " + why);
  return std::move(*text);
}

}  // namespace mbs::rt
