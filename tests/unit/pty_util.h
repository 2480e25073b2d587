// Running a program on a pseudo-terminal, for the tests of what it does on a terminal (progress
// lines, line editing): start it, type keys, wait for a text on the screen, press Ctrl-C, wait for
// its exit. Every wait has a deadline and a child that outlives the test is killed, so a test
// that fails never hangs.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

extern char** environ;

namespace mbs::ptytest {

using std::chrono::seconds;

struct PtyOptions {
  std::vector<std::string> env;  // "NAME=value", over the test's own environment
  std::string dir;               // working directory; "" = the test's
  bool null_stdout = false;      // stdout to /dev/null, only stdin and stderr on the terminal
};

class PtyProcess {
 public:
  // Starts argv[0] (a path) in a new session whose controlling terminal is an 80x24 pty.
  explicit PtyProcess(const std::vector<std::string>& argv, const PtyOptions& options = {}) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      const std::string_view entry(*e);
      bool replaced = false;
      for (const auto& mine : options.env)
        replaced |= entry.substr(0, entry.find('=') + 1) == mine.substr(0, mine.find('=') + 1);
      if (!replaced) env.emplace_back(entry);
    }
    env.insert(env.end(), options.env.begin(), options.env.end());
    // everything the child needs is prepared before fork
    std::vector<char*> args, envp;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    winsize size{};
    size.ws_row = 24;
    size.ws_col = 80;
    pid_ = ::forkpty(&master_, nullptr, nullptr, &size);
    if (pid_ == 0) {
      if (!options.dir.empty() && ::chdir(options.dir.c_str()) != 0) ::_exit(127);
      if (options.null_stdout) {
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, 1);
      }
      ::execve(args[0], args.data(), envp.data());
      ::_exit(127);
    }
  }
  ~PtyProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) ::close(master_);
  }
  PtyProcess(const PtyProcess&) = delete;
  PtyProcess& operator=(const PtyProcess&) = delete;

  bool started() const { return pid_ > 0 && master_ >= 0; }

  // Keys as a terminal sends them ("\t" Tab, "\r" Enter, "\x1b[A" arrow up, "\x04" Ctrl-D).
  void type(std::string_view keys) {
    while (!keys.empty()) {
      const ssize_t n = ::write(master_, keys.data(), keys.size());
      if (n <= 0) return;
      keys.remove_prefix(static_cast<size_t>(n));
    }
  }
  // Ctrl-C: the terminal's line discipline turns it into SIGINT for the foreground process.
  void interrupt() { type("\x03"); }

  // Everything written to the terminal so far.
  const std::string& screen() const { return screen_; }

  // Reads until `text` appears on the screen after what the previous wait found; false at the
  // deadline or when the program closed the terminal.
  bool wait_for(std::string_view text, seconds timeout = seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const size_t at = screen_.find(text, mark_);
      if (at != std::string::npos) {
        mark_ = at + text.size();
        return true;
      }
      if (std::chrono::steady_clock::now() >= deadline || !read_some(deadline)) return false;
    }
  }

  // Waits until the program reads the terminal key by key (ICANON off), as a line editor does
  // while it waits for a key. Between two lines it is back in canonical mode, where the line
  // discipline itself takes Ctrl-D (and a Ctrl-C comes before the program waits for it): keys
  // typed at a new prompt are sent after this.
  bool wait_for_raw_mode(seconds timeout = seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      termios mode{};
      if (::tcgetattr(master_, &mode) != 0) return false;
      if (!(mode.c_lflag & ICANON)) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      const auto tick = std::chrono::steady_clock::now() + std::chrono::milliseconds(10);
      if (!read_some(tick)) ::usleep(1000);
    }
  }

  // The exit code, or 128 + the signal that ended it; -1 when it still ran at the deadline (it
  // is then killed). The output up to the end is in screen().
  int wait_exit(seconds timeout = seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    for (;;) {
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
        return -1;
      }
      // keeps the pty drained, so the program never blocks writing to it
      if (!read_some(std::min(deadline, std::chrono::steady_clock::now() + seconds(1))))
        ::usleep(10000);
    }
    pid_ = -1;
    while (read_some(std::chrono::steady_clock::now())) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  // One read of what is there by the deadline; false at the deadline, at the end of the output
  // (EIO once the program closed the terminal) or on an error.
  bool read_some(std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{master_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::max<long>(0, left.count()))) <= 0) return false;
    char buf[4096];
    const ssize_t n = ::read(master_, buf, sizeof buf);
    if (n <= 0) return false;
    screen_.append(buf, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int master_ = -1;
  std::string screen_;
  size_t mark_ = 0;
};

}  // namespace mbs::ptytest
