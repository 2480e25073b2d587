#include "tools/fmu/Link.h"

#include <lld/Common/Driver.h>
#include <llvm/Support/raw_ostream.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "runtime/io/Home.h"

namespace mbs::fmu {

namespace {

namespace fs = std::filesystem;

// The system libraries an FMU library is linked against, as shared objects: glibc's own files,
// present on every glibc system, rather than libc6-dev's libc.so linker script. ld-linux provides
// __tls_get_addr (thread-local variables of libstdc++ and libgcc in a shared library).
constexpr const char* kSystemLibraries[] = {
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/x86_64-linux-gnu/libm.so.6",
    "/lib64/ld-linux-x86-64.so.2",
};

bool is_c_identifier(const std::string& s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// The linker takes any file it does not recognise as a linker script: an object must at least be
// a relocatable x86-64 ELF file (64-bit, little-endian) before it is passed on.
bool is_relocatable_x86_64_elf(const std::string& bytes) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(bytes[i]); };
  return bytes.size() >= 64 &&
         bytes.compare(0, 4,
                       "\x7f"
                       "ELF") == 0 &&
         byte(4) == 2 /*64-bit*/ && byte(5) == 1 /*little-endian*/ && byte(16) == 1 &&
         byte(17) == 0 /*ET_REL*/ && byte(18) == 62 && byte(19) == 0 /*EM_X86_64*/;
}

bool write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out.close(), out);
}

// A temporary directory removed with everything in it when the object goes.
class TempDir {
 public:
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/mbs-fmu-link-XXXXXX";
    if (mkdtemp(pattern.data())) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
}

// Runs LLD's ELF driver in a child process and returns its exit status (-1: it did not exit
// normally) and messages. LLD 16 keeps global state between links and ends the process on a fatal
// error (exitLld calls _exit even when asked not to exit early), so a link in-process could take
// the caller down with it; a forked child is a fresh linker every time, and its cost (a few
// milliseconds) is small next to the link. The child links with one thread: threads of the
// parent do not exist in it. Should it still hang (a lock some thread of the parent held at the
// fork), it is killed after kLinkTimeoutMs.
constexpr int kLinkTimeoutMs = 120'000;

int run_lld(const std::vector<std::string>& args, std::string& messages) {
  int fds[2];
  if (pipe(fds) != 0) {
    messages = std::string("cannot create a pipe: ") + std::strerror(errno);
    return -1;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    messages = std::string("cannot fork the linker: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    close(fds[0]);
    bool ok = false;
    {
      llvm::raw_fd_ostream out(fds[1], /*shouldClose=*/true, /*unbuffered=*/false);
      std::vector<const char*> argv;
      for (const std::string& a : args) argv.push_back(a.c_str());
      ok = lld::elf::link(argv, out, out, /*exitEarly=*/false, /*disableOutput=*/false);
      out.flush();
    }
    _exit(ok ? 0 : 1);
  }
  close(fds[1]);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kLinkTimeoutMs);
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    pollfd p{fds[0], POLLIN, 0};
    const int ready = left > 0 ? poll(&p, 1, static_cast<int>(left)) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = ready == 0;
      break;
    }
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) {
      messages.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  pid_t waited;
  while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited < 0) {
    messages += std::string("cannot wait for the linker: ") + std::strerror(errno) + "\n";
    return -1;
  }
  if (timed_out) {
    messages += "the linker did not finish within " + std::to_string(kLinkTimeoutMs / 1000) +
                " s and was stopped\n";
    return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  messages += "the linker ended with signal " + std::to_string(WTERMSIG(status)) + "\n";
  return -1;
}

}  // namespace

std::string runtime_blob_path() {
  return rt::install_home().fmu_runtime();
}

std::string link_shared_library(const std::vector<std::string>& objects,
                                const std::vector<std::string>& exported_symbols,
                                const std::string& out_path) {
  const std::string what = "cannot link the FMU library " + out_path + ": ";
  for (const std::string& s : exported_symbols) {
    if (!is_c_identifier(s)) return what + "'" + s + "' is not a C identifier to export";
  }
  for (size_t i = 0; i < objects.size(); ++i) {
    if (!is_relocatable_x86_64_elf(objects[i])) {
      return what + "object " + std::to_string(i) + " is not a relocatable x86-64 ELF object";
    }
  }
  if (runtime_blob_path().empty() || !fs::exists(runtime_blob_path())) {
    return what + "the FMU runtime " + runtime_blob_path() + " does not exist (" +
           rt::install_home().explain() + ")";
  }
  for (const char* lib : kSystemLibraries) {
    if (!fs::exists(lib)) return what + "the system library " + lib + " does not exist";
  }
  TempDir dir;
  if (dir.path().empty()) return what + "cannot create a temporary directory";

  // ld.lld: -shared, exports from the version script only, every reference resolved (libc and
  // libm through their shared objects), references inside the library bound to its own
  // definitions (-Bsymbolic: an importer may load several FMUs that export the same names),
  // .eh_frame_hdr for the unwinder, relocations read-only after loading, no executable stack.
  // Warnings are errors: LLD 16 only warns about an export that is not defined, even with
  // --no-undefined-version.
  std::vector<std::string> args = {"ld.lld",
                                   "-m",
                                   "elf_x86_64",
                                   "-shared",
                                   "-o",
                                   out_path,
                                   "-soname",
                                   fs::path(out_path).filename().string(),
                                   "--no-undefined",
                                   "-Bsymbolic",
                                   "--no-undefined-version",
                                   "--eh-frame-hdr",
                                   "--gc-sections",
                                   "--hash-style=both",
                                   "--build-id=sha1",
                                   "-z",
                                   "now",
                                   "-z",
                                   "relro",
                                   "-z",
                                   "noexecstack",
                                   "--threads=1",
                                   "--fatal-warnings",
                                   "--color-diagnostics=never",
                                   "--version-script"};
  std::string script = "{\n  global:\n";
  for (const std::string& s : exported_symbols) script += "    " + s + ";\n";
  script += "  local: *;\n};\n";
  const fs::path script_path = dir.path() / "exports.map";
  if (!write_file(script_path, script)) return what + "cannot write " + script_path.string();
  args.push_back(script_path.string());
  for (size_t i = 0; i < objects.size(); ++i) {
    const fs::path p = dir.path() / ("object" + std::to_string(i) + ".o");
    if (!write_file(p, objects[i])) return what + "cannot write " + p.string();
    args.push_back(p.string());
  }
  args.push_back(runtime_blob_path());
  args.push_back("--as-needed");
  for (const char* lib : kSystemLibraries) args.push_back(lib);

  std::string messages;
  const int status = run_lld(args, messages);
  replace_all(messages, dir.path().string() + "/", "");
  while (!messages.empty() && messages.back() == '\n') messages.pop_back();
  // LLD writes a temporary file next to out_path and renames it when the link has succeeded: on
  // failure out_path is untouched (a library linked there before stays).
  if (status == 0) return "";
  if (messages.empty()) return what + "the linker failed without a message";
  return what.substr(0, what.size() - 1) + "\n" + messages;
}

}  // namespace mbs::fmu
