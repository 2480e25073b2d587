// libedit's own API (histedit.h) rather than its readline emulation: el_init takes the streams
// (the emulation reads process-wide rl_instream/rl_outstream), a bound function sees the line
// and the cursor and decides itself what Tab does, and EL_GETCFN lets us read the keys, which is
// where Ctrl-C is made reliable (read_key below). libedit's own signal handling (EL_SIGNAL) stays
// off: its handler re-sends the signal to the whole process group with kill(0, ...). Without it a
// resized terminal is measured again at the next prompt (el_gets does that for each line).
#include "tools/repl/LineEditor.h"

#include <histedit.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cwchar>
#include <filesystem>
#include <stdexcept>

#include "runtime/io/AtomicFile.h"
#include "runtime/io/Interrupt.h"

namespace mbs::repl {

namespace {
constexpr int kHistorySize = 1000;
}  // namespace

struct LineEditor::State {
  std::FILE* in = nullptr;
  std::FILE* out = nullptr;
  std::FILE* err = nullptr;
  std::string program;
  std::string history_file;  // "" = not saved
  bool save_failed = false;  // said once, not after every line
  History* hist = nullptr;
  EditLine* el = nullptr;  // nullptr: plain reading (not a terminal)
  std::string prompt;
  Completer completer;
  std::mbstate_t key_state{};  // a multibyte key arrives byte by byte
};

namespace {

using State = LineEditor::State;

State& state_of(EditLine* el) {
  void* p = nullptr;
  el_get(el, EL_CLIENTDATA, &p);
  return *static_cast<State*>(p);
}

char* prompt_of(EditLine* el) {
  return state_of(el).prompt.data();
}

// libedit's own reader (read.c, Debian 12's 3.1-20221030) gives up at an EINTR of its read()
// (EL_SAFEREAD is off), so a Ctrl-C while it waits for a key ends el_gets at once. A SIGINT that
// comes while it is not inside read() (drawing the prompt, running the completer, between the
// keys of a sequence) only sets the flag, and the next read() waits for another key: Ctrl-C had
// to be pressed twice. Here SIGINT is blocked while the flag is tested and unblocked only inside
// ppoll, atomically, so a Ctrl-C at any moment ends el_gets at the first press (-1 with errno
// EINTR: el_gets returns NULL).
int read_key(EditLine* el, wchar_t* key) {
  State& s = state_of(el);
  const int fd = fileno(s.in);
  sigset_t sigint, mask;
  sigemptyset(&sigint);
  sigaddset(&sigint, SIGINT);
  for (;;) {
    pthread_sigmask(SIG_BLOCK, &sigint, &mask);
    if (rt::interrupt_requested()) {
      pthread_sigmask(SIG_SETMASK, &mask, nullptr);
      errno = EINTR;
      return -1;
    }
    sigset_t waiting = mask;
    sigdelset(&waiting, SIGINT);
    pollfd p{fd, POLLIN, 0};
    const int ready = ::ppoll(&p, 1, nullptr, &waiting);
    const int poll_errno = errno;
    pthread_sigmask(SIG_SETMASK, &mask, nullptr);
    if (ready < 0) {
      if (poll_errno == EINTR) continue;  // the flag decides
      errno = poll_errno;
      return -1;
    }
    char byte = 0;
    const ssize_t n = ::read(fd, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *key = L'\0';
      return n == 0 ? 0 : -1;
    }
    const size_t used = std::mbrtowc(key, &byte, 1, &s.key_state);
    if (used == static_cast<size_t>(-2)) continue;  // more bytes of this character follow
    if (used == static_cast<size_t>(-1)) {          // not a character here: dropped, like libedit
      s.key_state = std::mbstate_t{};
      continue;
    }
    return 1;
  }
}

size_t characters(std::string_view utf8) {
  return static_cast<size_t>(std::count_if(utf8.begin(), utf8.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

int terminal_columns(EditLine* el) {
  int columns = 0;
  if (el_get(el, EL_GETTC, "co", &columns, static_cast<void*>(nullptr)) != 0 || columns <= 0)
    return 80;
  return columns;
}

// Below the line, in columns ordered down then across like ls.
void list_candidates(std::FILE* out, const std::vector<std::string>& candidates, int width) {
  size_t longest = 0;
  for (const auto& c : candidates) longest = std::max(longest, characters(c));
  const size_t column = longest + 2;
  const size_t columns = std::max<size_t>(1, static_cast<size_t>(width) / column);
  const size_t rows = (candidates.size() + columns - 1) / columns;
  std::fputs("\n", out);
  for (size_t r = 0; r < rows; ++r) {
    std::string line;
    for (size_t k = r; k < candidates.size(); k += rows) {
      if (!line.empty()) line.append(column - characters(line) % column, ' ');
      line += candidates[k];
    }
    std::fputs((line + "\n").c_str(), out);
  }
  std::fflush(out);
}

// Tab: to the unique candidate (and a space after a word that is not a directory), else to the
// candidates' common prefix; when neither extends the word, the candidates are listed and the
// prompt and line drawn again below them. So a second Tab lists what the first could not decide.
unsigned char complete(EditLine* el, int) {
  State& s = state_of(el);
  if (!s.completer) return CC_ERROR;
  const LineInfo* li = el_line(el);
  const std::string before(li->buffer, li->cursor);
  const size_t break_at = before.find_last_of(kWordBreaks);
  const size_t start = break_at == std::string::npos ? 0 : break_at + 1;
  const std::string_view word = std::string_view(before).substr(start);
  const std::vector<std::string> candidates = s.completer(before, start);
  if (candidates.empty()) return CC_ERROR;  // a beep
  std::string replacement;
  if (candidates.size() == 1) {
    replacement = candidates.front();
    if (!replacement.ends_with('/')) replacement += ' ';
  } else {
    replacement = common_prefix(candidates);
    if (replacement.size() <= word.size() || !replacement.starts_with(word)) replacement.clear();
  }
  if (replacement.empty()) {
    list_candidates(s.out, candidates, terminal_columns(el));
    return CC_REDISPLAY;
  }
  el_deletestr(el, static_cast<int>(characters(word)));
  el_insertstr(el, replacement.c_str());
  return CC_REFRESH;
}

bool is_terminal(std::FILE* f) {
  return f && ::isatty(fileno(f)) == 1;
}

// fgets-style, for input that is not a terminal; Ctrl-C drops the partial line.
std::optional<std::string> read_plain_line(std::FILE* in) {
  std::string line;
  for (;;) {
    const int c = std::getc(in);
    if (c == '\n') return line;
    if (c != EOF) {
      line += static_cast<char>(c);
      continue;
    }
    if (std::ferror(in) && errno == EINTR && rt::interrupt_requested()) {
      std::clearerr(in);
      rt::clear_interrupt();
      return std::string();
    }
    if (line.empty()) return std::nullopt;
    return line;
  }
}

// libedit's own H_SAVE truncates the file and then writes it: a full disk or a kill on the way
// loses the history. So the text is made in a temporary file (H_SAVE_FP needs a real file: it
// calls fchmod) and the history file replaced whole.
void save_history(State& s) {
  if (s.history_file.empty() || s.save_failed) return;
  try {
    std::FILE* f = std::tmpfile();
    if (!f) throw std::runtime_error(std::string("no temporary file: ") + std::strerror(errno));
    HistEvent ev;
    std::string text;
    const bool saved = ::history(s.hist, &ev, H_SAVE_FP, f) >= 0 && std::fflush(f) == 0;
    std::rewind(f);
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    const bool read = !std::ferror(f);
    std::fclose(f);
    if (!saved || !read) throw std::runtime_error("libedit could not write it out");
    rt::write_file_atomically(s.history_file, text);
  } catch (const std::exception& e) {
    std::fprintf(s.err, "%s: the history is not saved: %s\n", s.program.c_str(), e.what());
    s.save_failed = true;
  }
}

}  // namespace

LineEditor::LineEditor(const char* program, std::string history_file, std::FILE* in, std::FILE* out,
                       std::FILE* err)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.in = in;
  s.out = out;
  s.err = err;
  s.program = program;
  s.history_file = std::move(history_file);
  HistEvent ev;
  s.hist = history_init();
  ::history(s.hist, &ev, H_SETSIZE, kHistorySize);
  ::history(s.hist, &ev, H_SETUNIQUE, 1);
  if (!s.history_file.empty()) {
    std::error_code ec;
    // A file that exists but is not a history is never overwritten.
    if (std::filesystem::exists(s.history_file, ec) &&
        ::history(s.hist, &ev, H_LOAD, s.history_file.c_str()) < 0) {
      std::fprintf(err, "%s: %s is not a history file (libedit); it is left alone\n", program,
                   s.history_file.c_str());
      s.history_file.clear();
    }
  }
  if (!is_terminal(in) || !is_terminal(out)) return;
  s.el = el_init(program, in, out, err);
  if (!s.el) return;
  el_set(s.el, EL_CLIENTDATA, &s);
  el_set(s.el, EL_EDITOR, "emacs");
  el_set(s.el, EL_PROMPT, prompt_of);
  el_set(s.el, EL_HIST, ::history, s.hist);
  el_set(s.el, EL_GETCFN, read_key);
  // the wide form: the narrow el_set(EL_ADDFN) copies the name and help with wcsdup and never
  // frees them (a leak LeakSanitizer reports); el_wset keeps these static strings
  el_wset(s.el, EL_ADDFN, L"mbs-complete", L"complete the word before the cursor", complete);
  el_set(s.el, EL_BIND, "^I", "mbs-complete", static_cast<const char*>(nullptr));
}

LineEditor::~LineEditor() {
  save_history(*state_);
  if (state_->el) el_end(state_->el);
  history_end(state_->hist);
}

std::optional<std::string> LineEditor::read_line(const std::string& prompt) {
  State& s = *state_;
  rt::clear_interrupt();  // a Ctrl-C that stopped the previous command is not one at this prompt
  if (!s.el) return read_plain_line(s.in);
  s.prompt = prompt;
  int count = 0;
  const char* line = el_gets(s.el, &count);
  if (!line && rt::interrupt_requested()) {
    rt::clear_interrupt();
    std::fputs("\n", s.out);
    std::fflush(s.out);
    return std::string();
  }
  if (!line || count <= 0) {
    std::fputs("\n", s.out);  // after the "^D" libedit wrote, so what follows starts a line
    std::fflush(s.out);
    return std::nullopt;
  }
  std::string text(line, static_cast<size_t>(count));
  if (text.ends_with('\n')) text.pop_back();
  return text;
}

void LineEditor::add_history(const std::string& line) {
  if (line.find_first_not_of(" \t") == std::string::npos) return;
  HistEvent ev;
  ::history(state_->hist, &ev, H_ENTER, line.c_str());
  save_history(*state_);
}

std::vector<std::string> LineEditor::history() const {
  std::vector<std::string> lines;
  HistEvent ev;
  // libedit's first is the newest entry and "next" goes back in time
  for (int r = ::history(state_->hist, &ev, H_LAST); r >= 0;
       r = ::history(state_->hist, &ev, H_PREV))
    lines.emplace_back(ev.str);
  return lines;
}

void LineEditor::set_completer(Completer c) {
  state_->completer = std::move(c);
}

std::vector<std::string> complete_filename(std::string_view prefix) {
  namespace fs = std::filesystem;
  const size_t slash = prefix.rfind('/');
  const std::string dir(slash == std::string_view::npos ? "" : prefix.substr(0, slash + 1));
  const std::string_view base = slash == std::string_view::npos ? prefix : prefix.substr(slash + 1);
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(dir.empty() ? fs::path(".") : fs::path(dir),
                            fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(base) || (name.starts_with('.') && !base.starts_with('.'))) continue;
    std::error_code dir_ec;
    names.push_back(dir + name + (it->is_directory(dir_ec) ? "/" : ""));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string common_prefix(const std::vector<std::string>& candidates) {
  if (candidates.empty()) return "";
  size_t n = candidates.front().size();
  for (const auto& c : candidates) {
    const auto diff =
        std::mismatch(c.begin(), c.begin() + std::min(n, c.size()), candidates.front().begin());
    n = static_cast<size_t>(diff.first - c.begin());
  }
  // not in the middle of a UTF-8 character
  const std::string& first = candidates.front();
  while (n > 0 && n < first.size() && (static_cast<unsigned char>(first[n]) & 0xC0) == 0x80) --n;
  return first.substr(0, n);
}

}  // namespace mbs::repl
