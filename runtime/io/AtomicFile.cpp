#include "runtime/io/AtomicFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace mbs::rt {

namespace {

bool under(const std::string& path, const char* dir) {
  return path.rfind(dir, 0) == 0;
}

}  // namespace

std::runtime_error io_error(std::string_view what, const std::string& path, int err) {
  return std::runtime_error(std::string(what) + " '" + path + "': " + std::strerror(err));
}

void write_fully(int fd, const void* data, size_t size, std::string_view what,
                 const std::string& path, int64_t offset) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = offset >= 0 ? ::pwrite(fd, p, size, offset) : ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;  // e.g. the SIGINT that stops a run
    if (n < 0) throw io_error(what, path, errno);
    p += n;
    size -= static_cast<size_t>(n);
    if (offset >= 0) offset += n;
  }
}

OutputTarget output_target(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {path, false};  // new (or a dangling link: rename)
  auto refuse = [&](const char* kind) {
    return std::runtime_error("will not write '" + path + "': it is " + kind +
                              "; give the path of a file");
  };
  if (S_ISDIR(st.st_mode)) throw refuse("a directory");
  if (S_ISBLK(st.st_mode)) throw refuse("a block device (a disk)");
  if (S_ISSOCK(st.st_mode)) throw refuse("a socket");
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return {path, true};
  std::error_code ec;
  const std::string absolute = std::filesystem::absolute(path, ec).lexically_normal().string();
  // /dev/stdout or /proc/self/fd/1 redirected to a file: that file is the shell's; append to it
  if (under(absolute, "/dev/") || under(absolute, "/proc/")) return {path, true};
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    const std::filesystem::path resolved = std::filesystem::canonical(path, ec);
    if (!ec) return {resolved.string(), false};
  }
  return {path, false};
}

int open_in_place(const std::string& path) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0 && errno == ENXIO)
    throw std::runtime_error("cannot write '" + path + "': it is a FIFO that no process reads");
  if (fd < 0) throw io_error("cannot open", path, errno);
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);  // a full pipe waits for its reader
  return fd;
}

std::string temporary_for(const OutputTarget& target) {
  static std::atomic<unsigned> counter{0};
  const std::string suffix = ".tmp." + std::to_string(::getpid()) + "." +
                             std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
  if (!target.in_place) return target.path + suffix;
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  return ((ec ? std::filesystem::path("/tmp") : dir) / ("mbs" + suffix)).string();
}

void commit_temporary(const std::string& tmp, const OutputTarget& target,
                      const std::string& shown) {
  if (!target.in_place) {
    if (std::rename(tmp.c_str(), target.path.c_str()) != 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      throw io_error("cannot write", shown, err);
    }
    return;
  }
  const int in = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw io_error("cannot read the temporary file for", shown, err);
  }
  try {
    const int out = open_in_place(target.path);
    try {
      char buffer[1 << 16];
      for (;;) {
        const ssize_t n = ::read(in, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw io_error("cannot read the temporary file for", shown, errno);
        if (n == 0) break;
        write_fully(out, buffer, static_cast<size_t>(n), "cannot write", shown);
      }
    } catch (...) {
      ::close(out);
      throw;
    }
    if (::close(out) != 0 && errno != EINTR) throw io_error("cannot write", shown, errno);
  } catch (...) {
    ::close(in);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(in);
  ::unlink(tmp.c_str());
}

void write_file_atomically(const std::string& path, std::string_view content) {
  const OutputTarget target = output_target(path);
  if (target.in_place) {
    const int fd = open_in_place(target.path);
    try {
      write_fully(fd, content.data(), content.size(), "cannot write", path);
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (::close(fd) != 0 && errno != EINTR) throw io_error("cannot write", path, errno);
    return;
  }
  // beside the target, so that rename() stays within one file system
  const std::string tmp = temporary_for(target);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw io_error("cannot open", path, errno);
  try {
    write_fully(fd, content.data(), content.size(), "cannot write", path);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw io_error("cannot write", path, err);
  }
  commit_temporary(tmp, target, path);
}

}  // namespace mbs::rt
