// Diagnostics: one registry of kinds (DiagKinds.def), source spans, and a renderer that prints
//   file:line:col: error: message
//     <source line>
//     ^~~~
//   file:line:col: note: ...
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace mbs {

// A range in one source file. Lines and columns are 1-based; end is inclusive of the last
// character. A default Span (line 0) is "no location". Columns count Unicode code points (a byte
// that is not valid UTF-8 counts as one column; a tab counts as one column).
struct Span {
  uint32_t file = 0;
  uint32_t line = 0;
  uint32_t col = 0;
  uint32_t end_line = 0;
  uint32_t end_col = 0;
  bool valid() const { return line != 0; }
};

// Holds the text of every file read in one compilation; file ids start at 1.
class SourceManager {
 public:
  uint32_t add_file(std::string path, std::string text);
  const std::string& path(uint32_t file) const;
  const std::string& text(uint32_t file) const;
  // The text of line `line` (1-based) of `file`, without its newline; empty if out of range.
  std::string_view line_text(uint32_t file, uint32_t line) const;
  // Number of lines of `file` (a file ending in a newline has an empty last line); 0 if unknown.
  size_t line_count(uint32_t file) const;
  size_t file_count() const { return files_.size(); }

 private:
  struct File {
    std::string path;
    std::string text;
    std::vector<size_t> line_starts;
  };
  std::vector<File> files_;
};

enum class DiagLevel : uint8_t { Error, Warning, Note };

enum class DiagKind : uint16_t {
#define MBS_DIAG(name, level, format) name,
#include "compiler/diag/DiagKinds.def"
#undef MBS_DIAG
  Count_
};

struct DiagKindInfo {
  const char* name;
  DiagLevel level;
  const char* format;  // fmt-style with positional {0}, {1}, ...
};
const DiagKindInfo& diag_info(DiagKind kind);
size_t diag_kind_count();

struct Diagnostic {
  DiagKind kind;
  DiagLevel level;
  Span span;
  std::string message;
  struct Note {
    Span span;
    std::string message;
    bool is_help = false;
  };
  std::vector<Note> notes;
};

class DiagnosticEngine {
 public:
  explicit DiagnosticEngine(const SourceManager& sources) : sources_(sources) {}

  // Reports a diagnostic of `kind` with its format filled from args; returns it so notes can be
  // attached: engine.report(...).notes.push_back(...), or use note()/help() below.
  Diagnostic& report(DiagKind kind, Span span, std::vector<std::string> args = {});
  // Attach a note / help line to the most recent diagnostic.
  void note(Span span, std::string message);
  void help(std::string message);

  size_t error_count() const { return errors_; }
  bool has_errors() const { return errors_ != 0; }
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }
  // Kinds reported so far (for the coverage test).
  std::vector<DiagKind> kinds_seen() const;

  // Renders all diagnostics in order.
  void render(std::ostream& os) const;
  std::string render() const;

  // Stop reporting after this many errors (a final note says so).
  void set_error_limit(size_t n) { error_limit_ = n; }
  bool error_limit_reached() const { return errors_ >= error_limit_; }
  // Diagnostics thrown away because the error limit had been reached. Once this is non-zero the
  // engine has recorded a final `too_many_errors` note and records nothing more; a phase that
  // sees it should stop.
  size_t dropped_count() const { return dropped_; }

 private:
  const SourceManager& sources_;
  std::vector<Diagnostic> diags_;
  size_t errors_ = 0;
  size_t error_limit_ = 20;
  size_t dropped_ = 0;
  bool last_dropped_ = false;  // note()/help() then attach to nothing
  Diagnostic scratch_{};       // what report() returns for a dropped diagnostic
  std::vector<bool> seen_;     // indexed by DiagKind, for kinds_seen()
};

// Diagnostics that repeat on every compile of a correct model (the redundant rows of a planar
// loop): printed only with -v (CompileOptions::verbose), still counted in the kinds seen.
bool shown_only_when_verbose(DiagKind kind);

// Renders one diagnostic (used by the engine and by the runtime for solver messages).
void render_diagnostic(std::ostream& os, const SourceManager& sources, const Diagnostic& d);

// Length in bytes of the well-formed UTF-8 sequence that starts at s[i], or 0 if none starts there
// (a stray continuation byte, a truncated sequence, an overlong form, a surrogate or a code point
// above U+10FFFF).
size_t utf8_sequence_length(std::string_view s, size_t i);

}  // namespace mbs
