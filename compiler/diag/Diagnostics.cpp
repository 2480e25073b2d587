// Source files, the registry of diagnostic kinds and the renderer.
#include "compiler/diag/Diagnostics.h"

#include <fmt/args.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <ostream>
#include <sstream>

namespace mbs {

// ---------------------------------------------------------------- UTF-8

size_t utf8_sequence_length(std::string_view s, size_t i) {
  if (i >= s.size()) return 0;
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte (RFC 3629, table 3-7)
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;  // continuation byte, C0/C1 overlong lead, or F5..FF
  }
  if (i + len > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return len;
}

// ---------------------------------------------------------------- SourceManager

uint32_t SourceManager::add_file(std::string path, std::string text) {
  File f{std::move(path), std::move(text), {}};
  f.line_starts.push_back(0);
  for (size_t i = 0; i < f.text.size(); ++i) {
    if (f.text[i] == '\n') f.line_starts.push_back(i + 1);
  }
  files_.push_back(std::move(f));
  return static_cast<uint32_t>(files_.size());
}

namespace {
const std::string& empty_string() {
  static const std::string empty;
  return empty;
}
}  // namespace

const std::string& SourceManager::path(uint32_t file) const {
  if (file == 0 || file > files_.size()) return empty_string();
  return files_[file - 1].path;
}

const std::string& SourceManager::text(uint32_t file) const {
  if (file == 0 || file > files_.size()) return empty_string();
  return files_[file - 1].text;
}

size_t SourceManager::line_count(uint32_t file) const {
  if (file == 0 || file > files_.size()) return 0;
  return files_[file - 1].line_starts.size();
}

std::string_view SourceManager::line_text(uint32_t file, uint32_t line) const {
  if (file == 0 || file > files_.size()) return {};
  const File& f = files_[file - 1];
  if (line == 0 || line > f.line_starts.size()) return {};
  size_t begin = f.line_starts[line - 1];
  size_t end = line < f.line_starts.size() ? f.line_starts[line] - 1 : f.text.size();
  std::string_view v(f.text.data() + begin, end - begin);
  if (!v.empty() && v.back() == '\r') v.remove_suffix(1);
  return v;
}

// ---------------------------------------------------------------- registry

namespace {
constexpr DiagKindInfo kDiagTable[] = {
#define MBS_DIAG(name, level, format) {#name, DiagLevel::level, format},
#include "compiler/diag/DiagKinds.def"
#undef MBS_DIAG
};
static_assert(sizeof(kDiagTable) / sizeof(kDiagTable[0]) == static_cast<size_t>(DiagKind::Count_));

constexpr DiagKindInfo kUnknownKind{"unknown", DiagLevel::Error, "{0}"};
}  // namespace

const DiagKindInfo& diag_info(DiagKind kind) {
  auto i = static_cast<size_t>(kind);
  if (i >= static_cast<size_t>(DiagKind::Count_)) return kUnknownKind;
  return kDiagTable[i];
}

size_t diag_kind_count() {
  return static_cast<size_t>(DiagKind::Count_);
}

// ---------------------------------------------------------------- DiagnosticEngine

namespace {
// Fills `{0}`, `{1}`, ... of a registry format. A malformed format or a missing argument is a bug
// in the caller, but must not lose the message: it then shows the format and the arguments.
std::string format_message(const char* format, const std::vector<std::string>& args) {
  try {
    fmt::dynamic_format_arg_store<fmt::format_context> store;
    for (const auto& a : args) store.push_back(a);
    return fmt::vformat(format, store);
  } catch (const std::exception&) {
    std::string m = format;
    for (const auto& a : args) m += " [" + a + "]";
    return m;
  }
}
}  // namespace

Diagnostic& DiagnosticEngine::report(DiagKind kind, Span span, std::vector<std::string> args) {
  const DiagKindInfo& info = diag_info(kind);
  if (seen_.size() < diag_kind_count()) seen_.resize(diag_kind_count(), false);
  auto index = static_cast<size_t>(kind);
  if (index < seen_.size()) seen_[index] = true;

  const bool is_error = info.level == DiagLevel::Error;
  if (is_error) ++errors_;
  if (dropped_ > 0 || (is_error && errors_ > error_limit_)) {
    if (dropped_ == 0) {
      const DiagKindInfo& stop = diag_info(DiagKind::too_many_errors);
      diags_.push_back(Diagnostic{DiagKind::too_many_errors, stop.level, Span{}, stop.format, {}});
      seen_[static_cast<size_t>(DiagKind::too_many_errors)] = true;
    }
    ++dropped_;
    last_dropped_ = true;
    scratch_ = Diagnostic{kind, info.level, span, {}, {}};
    return scratch_;
  }
  last_dropped_ = false;
  // An argument is usually a name from the source; a pathological one (a 1 MB identifier)
  // is shortened so that the message stays readable. The caret line shows where it is.
  constexpr size_t kMaxArgument = 400;
  for (auto& a : args)
    if (a.size() > kMaxArgument) {
      size_t cut = kMaxArgument;
      while (cut > 0 && (static_cast<unsigned char>(a[cut]) & 0xC0) == 0x80) --cut;
      a = a.substr(0, cut) + "... (" + std::to_string(a.size()) + " bytes)";
    }
  diags_.push_back(Diagnostic{kind, info.level, span, format_message(info.format, args), {}});
  return diags_.back();
}

bool shown_only_when_verbose(DiagKind kind) {
  return kind == DiagKind::mech_planar_loop;
}

void DiagnosticEngine::note(Span span, std::string message) {
  if (last_dropped_ || diags_.empty()) return;
  diags_.back().notes.push_back(Diagnostic::Note{span, std::move(message), false});
}

void DiagnosticEngine::help(std::string message) {
  if (last_dropped_ || diags_.empty()) return;
  diags_.back().notes.push_back(Diagnostic::Note{Span{}, std::move(message), true});
}

std::vector<DiagKind> DiagnosticEngine::kinds_seen() const {
  std::vector<DiagKind> kinds;
  for (size_t i = 0; i < seen_.size(); ++i) {
    if (seen_[i]) kinds.push_back(static_cast<DiagKind>(i));
  }
  return kinds;
}

void DiagnosticEngine::render(std::ostream& os) const {
  for (const auto& d : diags_) render_diagnostic(os, sources_, d);
}

std::string DiagnosticEngine::render() const {
  std::ostringstream os;
  render(os);
  return os.str();
}

// ---------------------------------------------------------------- rendering

namespace {

const char* level_name(DiagLevel level) {
  switch (level) {
    case DiagLevel::Error:
      return "error";
    case DiagLevel::Warning:
      return "warning";
    case DiagLevel::Note:
      return "note";
  }
  return "error";
}

bool span_in_known_file(const SourceManager& sources, const Span& span) {
  return span.valid() && span.file != 0 && span.file <= sources.file_count();
}

// The source line of `span` and a caret line under it. Every code point of the line becomes one
// column of output: a tab is shown as a space, control characters and bytes that are not UTF-8 as
// '?', so that the caret lands under the column the span names. A line longer than
// kMaxShownColumns is cut to a window around the caret, marked with "...".
constexpr size_t kMaxShownColumns = 160;

void render_snippet(std::ostream& os, const SourceManager& sources, const Span& span) {
  if (span.line > sources.line_count(span.file)) return;
  std::string_view line = sources.line_text(span.file, span.line);
  if (span.line == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);  // BOM

  std::string shown;
  std::vector<size_t> column_start;  // byte offset in `shown` of each column
  for (size_t i = 0; i < line.size();) {
    size_t len = utf8_sequence_length(line, i);
    auto c = static_cast<unsigned char>(line[i]);
    column_start.push_back(shown.size());
    if (len == 0) {
      shown += '?';
      len = 1;
    } else if (c == '\t') {
      shown += ' ';
    } else if (c < 0x20 || c == 0x7F) {
      shown += '?';
    } else {
      shown.append(line.substr(i, len));
    }
    i += len;
  }
  const size_t columns = column_start.size();
  column_start.push_back(shown.size());

  size_t col = std::clamp<size_t>(span.col, 1, columns + 1);
  size_t last = col;
  if (span.end_line == span.line && span.end_col >= col) {
    last = std::min<size_t>(span.end_col, std::max(columns, col));
  } else if (span.end_line > span.line) {
    last = std::max(columns, col);
  }

  // Columns first..end (1-based, inclusive) are shown.
  size_t first = 1, end = columns;
  if (columns > kMaxShownColumns) {
    first = col > kMaxShownColumns / 3 ? col - kMaxShownColumns / 3 : 1;
    end = std::min(columns, first + kMaxShownColumns - 1);
    if (end - first + 1 < kMaxShownColumns) first = end - kMaxShownColumns + 1;
    last = std::min(last, std::max(end, col));
  }
  const char* prefix = first > 1 ? "..." : "";
  const char* suffix = end < columns ? "..." : "";
  std::string_view text(shown);
  text = text.substr(column_start[first - 1], column_start[end] - column_start[first - 1]);
  os << "  " << prefix << text << suffix << "\n";
  os << "  " << std::string(std::strlen(prefix) + (col - first), ' ') << '^'
     << std::string(last - col, '~') << "\n";
}

void render_located(std::ostream& os, const SourceManager& sources, const Span& span,
                    const char* level, const std::string& message) {
  if (span_in_known_file(sources, span)) {
    os << sources.path(span.file) << ':' << span.line << ':' << span.col << ": " << level << ": "
       << message << "\n";
    render_snippet(os, sources, span);
  } else if (span.valid()) {
    os << "<unknown>:" << span.line << ':' << span.col << ": " << level << ": " << message << "\n";
  } else if (span.file != 0 && span.file <= sources.file_count()) {
    // a whole file: `path: error: ...`
    os << sources.path(span.file) << ": " << level << ": " << message << "\n";
  } else {
    os << level << ": " << message << "\n";
  }
}

}  // namespace

void render_diagnostic(std::ostream& os, const SourceManager& sources, const Diagnostic& d) {
  render_located(os, sources, d.span, level_name(d.level), d.message);
  for (const auto& n : d.notes) {
    if (n.is_help) {
      os << "help: " << n.message << "\n";
    } else {
      render_located(os, sources, n.span, "note", n.message);
    }
  }
}

}  // namespace mbs
