// Diagnostics: source files, the kind registry, the engine (error limit, notes) and the exact
// rendered text.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "compiler/diag/Diagnostics.h"

namespace mbs {
namespace {

Span at(uint32_t file, uint32_t line, uint32_t col, uint32_t end_col) {
  return Span{file, line, col, line, end_col};
}

std::string render(const SourceManager& sm, const Diagnostic& d) {
  std::ostringstream os;
  render_diagnostic(os, sm, d);
  return os.str();
}

// ---------------------------------------------------------------- SourceManager

TEST(SourceManager, LinesAreNumberedFromOneWithoutNewlines) {
  SourceManager sm;
  uint32_t id = sm.add_file("a.mbs", "model M\r\n  Real x;\n\nend M;");
  EXPECT_EQ(id, 1u);
  EXPECT_EQ(sm.file_count(), 1u);
  EXPECT_EQ(sm.path(id), "a.mbs");
  EXPECT_EQ(sm.line_count(id), 4u);
  EXPECT_EQ(sm.line_text(id, 1), "model M");  // '\r' of CRLF dropped
  EXPECT_EQ(sm.line_text(id, 2), "  Real x;");
  EXPECT_EQ(sm.line_text(id, 3), "");
  EXPECT_EQ(sm.line_text(id, 4), "end M;");
}

TEST(SourceManager, OutOfRangeQueriesAreEmpty) {
  SourceManager sm;
  uint32_t id = sm.add_file("a.mbs", "x\n");
  EXPECT_EQ(sm.line_count(id), 2u);  // the empty line after the final newline
  EXPECT_EQ(sm.line_text(id, 0), "");
  EXPECT_EQ(sm.line_text(id, 3), "");
  EXPECT_EQ(sm.line_text(0, 1), "");
  EXPECT_EQ(sm.line_text(7, 1), "");
  EXPECT_EQ(sm.path(0), "");
  EXPECT_EQ(sm.text(9), "");
  EXPECT_EQ(sm.line_count(9), 0u);
  EXPECT_EQ(sm.add_file("b.mbs", ""), 2u);
  EXPECT_EQ(sm.line_count(2), 1u);
}

TEST(Utf8, SequenceLengths) {
  EXPECT_EQ(utf8_sequence_length("a", 0), 1u);
  EXPECT_EQ(utf8_sequence_length(std::string_view("\0", 1), 0), 1u);
  EXPECT_EQ(utf8_sequence_length("\xC3\xA9", 0), 2u);          // é
  EXPECT_EQ(utf8_sequence_length("\xE2\x82\xAC", 0), 3u);      // €
  EXPECT_EQ(utf8_sequence_length("\xF0\x9F\x98\x80", 0), 4u);  // U+1F600
  EXPECT_EQ(utf8_sequence_length("\xF4\x8F\xBF\xBF", 0), 4u);  // U+10FFFF
  EXPECT_EQ(utf8_sequence_length("\x80", 0), 0u);              // lone continuation byte
  EXPECT_EQ(utf8_sequence_length("\xC3", 0), 0u);              // truncated
  EXPECT_EQ(utf8_sequence_length("\xC3(", 0), 0u);             // bad continuation
  EXPECT_EQ(utf8_sequence_length("\xC0\xAF", 0), 0u);          // overlong '/'
  EXPECT_EQ(utf8_sequence_length("\xE0\x80\xAF", 0), 0u);      // overlong
  EXPECT_EQ(utf8_sequence_length("\xED\xA0\x80", 0), 0u);      // surrogate U+D800
  EXPECT_EQ(utf8_sequence_length("\xF4\x90\x80\x80", 0), 0u);  // above U+10FFFF
  EXPECT_EQ(utf8_sequence_length("\xFF", 0), 0u);
  EXPECT_EQ(utf8_sequence_length("a", 1), 0u);  // past the end
}

// ---------------------------------------------------------------- registry

TEST(Registry, NamesAreUniqueAndEveryKindHasAnEntry) {
  std::set<std::string> names;
  for (size_t i = 0; i < diag_kind_count(); ++i) {
    const DiagKindInfo& info = diag_info(static_cast<DiagKind>(i));
    ASSERT_NE(info.name, nullptr);
    ASSERT_NE(info.format, nullptr);
    EXPECT_TRUE(names.insert(info.name).second) << "duplicate kind " << info.name;
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(DiagKind::Count_));
  EXPECT_STREQ(diag_info(DiagKind::syntax_error).name, "syntax_error");
  EXPECT_EQ(diag_info(DiagKind::too_many_errors).level, DiagLevel::Note);
  // An out-of-range kind does not crash.
  EXPECT_STREQ(diag_info(DiagKind::Count_).name, "unknown");
}

TEST(Registry, FormatsAreFilledPositionally) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  diags.report(DiagKind::end_name_mismatch, Span{}, {"Foo", "Bar"});
  EXPECT_EQ(diags.diagnostics().back().message, "'end Foo' does not match 'Bar'");
  // Braces inside an argument are not a format.
  diags.report(DiagKind::syntax_error, Span{}, {"a {0} b {"});
  EXPECT_EQ(diags.diagnostics().back().message, "a {0} b {");
  // A missing argument is a caller bug but keeps the message.
  diags.report(DiagKind::end_name_mismatch, Span{}, {"Foo"});
  EXPECT_EQ(diags.diagnostics().back().message, "'end {0}' does not match '{1}' [Foo]");
}

// ---------------------------------------------------------------- rendering

TEST(Render, ErrorWithSourceLineAndCaret) {
  SourceManager sm;
  uint32_t id = sm.add_file("path/to/file.mbs", "model Pendulum\n  Real x(start = 1)\n  Real y;\n");
  Diagnostic d{DiagKind::syntax_error,
               DiagLevel::Error,
               at(id, 3, 3, 6),
               "expected ';' after declaration, found 'Real'",
               {}};
  d.notes.push_back({at(id, 1, 7, 14), "model 'Pendulum' begins here", false});
  EXPECT_EQ(render(sm, d),
            "path/to/file.mbs:3:3: error: expected ';' after declaration, found 'Real'\n"
            "    Real y;\n"
            "    ^~~~\n"
            "path/to/file.mbs:1:7: note: model 'Pendulum' begins here\n"
            "  model Pendulum\n"
            "        ^~~~~~~~\n");
}

TEST(Render, SingleColumnSpanIsJustACaret) {
  SourceManager sm;
  uint32_t id = sm.add_file("f.mbs", "x = (1 + 2;\n");
  Diagnostic d{DiagKind::syntax_error, DiagLevel::Error, at(id, 1, 11, 11), "expected ')'", {}};
  EXPECT_EQ(render(sm, d), "f.mbs:1:11: error: expected ')'\n  x = (1 + 2;\n            ^\n");
}

TEST(Render, CaretJustPastTheEndOfTheLine) {
  SourceManager sm;
  uint32_t id = sm.add_file("f.mbs", "  x = 1\nend M;\n");
  Diagnostic d{DiagKind::syntax_error, DiagLevel::Error, at(id, 1, 8, 8), "expected ';'", {}};
  EXPECT_EQ(render(sm, d), "f.mbs:1:8: error: expected ';'\n    x = 1\n         ^\n");
}

TEST(Render, MultiLineSpanUnderlinesToTheEndOfTheFirstLine) {
  SourceManager sm;
  uint32_t id = sm.add_file("f.mbs", "  x = \"abc\n  def\";\n");
  Diagnostic d{DiagKind::syntax_error, DiagLevel::Error, Span{id, 1, 7, 2, 6}, "bad string", {}};
  EXPECT_EQ(render(sm, d), "f.mbs:1:7: error: bad string\n    x = \"abc\n        ^~~~\n");
}

TEST(Render, NotesHelpAndNoLocation) {
  SourceManager sm;
  uint32_t id = sm.add_file("f.mbs", "model M\nend N;\n");
  Diagnostic d{DiagKind::end_name_mismatch,
               DiagLevel::Error,
               at(id, 2, 5, 5),
               "'end N' does not match 'M'",
               {}};
  d.notes.push_back({Span{}, "a note without location", false});
  d.notes.push_back({Span{}, "rename one of them", true});
  EXPECT_EQ(render(sm, d),
            "f.mbs:2:5: error: 'end N' does not match 'M'\n"
            "  end N;\n"
            "      ^\n"
            "note: a note without location\n"
            "help: rename one of them\n");

  Diagnostic bare{DiagKind::file_not_found, DiagLevel::Error, Span{}, "cannot open file 'x'", {}};
  EXPECT_EQ(render(sm, bare), "error: cannot open file 'x'\n");
  Diagnostic warning{DiagKind::syntax_error, DiagLevel::Warning, at(id, 1, 1, 5), "careful", {}};
  EXPECT_EQ(render(sm, warning), "f.mbs:1:1: warning: careful\n  model M\n  ^~~~~\n");
}

TEST(Render, TabsBecomeOneSpaceSoCaretsAlign) {
  SourceManager sm;
  uint32_t id = sm.add_file("f.mbs", "\tReal\tx\n");
  // Columns count a tab as one column: `x` is column 7.
  Diagnostic d{DiagKind::syntax_error, DiagLevel::Error, at(id, 1, 7, 7), "here", {}};
  EXPECT_EQ(render(sm, d), "f.mbs:1:7: error: here\n   Real x\n        ^\n");
}

TEST(Render, ControlCharactersAndInvalidBytesTakeOneColumn) {
  SourceManager sm;
  uint32_t id = sm.add_file("f.mbs", std::string("a\x01\xFF"
                                                 "b\n",
                                                 5));
  Diagnostic d{DiagKind::invalid_utf8, DiagLevel::Error, at(id, 1, 4, 4), "b", {}};
  EXPECT_EQ(render(sm, d), "f.mbs:1:4: error: b\n  a??b\n     ^\n");
}

TEST(Render, MultiByteCharactersCountAsOneColumn) {
  SourceManager sm;
  uint32_t id = sm.add_file("f.mbs", "s = \"\xC3\xA9t\xC3\xA9\" x\n");
  Diagnostic d{DiagKind::syntax_error, DiagLevel::Error, at(id, 1, 11, 11), "x", {}};
  EXPECT_EQ(render(sm, d), "f.mbs:1:11: error: x\n  s = \"\xC3\xA9t\xC3\xA9\" x\n            ^\n");
}

TEST(Render, LongLinesAreCutAroundTheCaret) {
  SourceManager sm;
  std::string line = std::string(300, 'a') + "X" + std::string(300, 'b');
  uint32_t id = sm.add_file("f.mbs", line + "\n");
  Diagnostic d{DiagKind::syntax_error, DiagLevel::Error, at(id, 1, 301, 301), "x", {}};
  std::string out = render(sm, d);
  // The window starts 53 columns before the caret and shows 160 columns.
  std::string shown = "..." + std::string(53, 'a') + "X" + std::string(106, 'b') + "...";
  EXPECT_EQ(out, "f.mbs:1:301: error: x\n  " + shown + "\n  " + std::string(56, ' ') + "^\n");
}

TEST(Render, SpansOutsideTheFileDoNotCrash) {
  SourceManager sm;
  uint32_t id = sm.add_file("f.mbs", "abc\n");
  Diagnostic beyond_col{DiagKind::syntax_error, DiagLevel::Error, at(id, 1, 99, 120), "c", {}};
  EXPECT_EQ(render(sm, beyond_col), "f.mbs:1:99: error: c\n  abc\n     ^\n");
  Diagnostic beyond_line{DiagKind::syntax_error, DiagLevel::Error, at(id, 9, 1, 1), "l", {}};
  EXPECT_EQ(render(sm, beyond_line), "f.mbs:9:1: error: l\n");
  Diagnostic unknown_file{DiagKind::syntax_error, DiagLevel::Error, at(5, 2, 3, 3), "u", {}};
  EXPECT_EQ(render(sm, unknown_file), "<unknown>:2:3: error: u\n");
  Diagnostic backwards{DiagKind::syntax_error, DiagLevel::Error, Span{id, 1, 3, 1, 1}, "b", {}};
  EXPECT_EQ(render(sm, backwards), "f.mbs:1:3: error: b\n  abc\n    ^\n");
}

// ---------------------------------------------------------------- engine

TEST(Engine, NotesAndHelpAttachToTheLastDiagnostic) {
  SourceManager sm;
  uint32_t id = sm.add_file("f.mbs", "model M\nend N;\n");
  DiagnosticEngine diags(sm);
  diags.note(Span{}, "ignored: nothing to attach to");
  diags.report(DiagKind::end_name_mismatch, at(id, 2, 5, 5), {"N", "M"});
  diags.note(at(id, 1, 7, 7), "model 'M' begins here");
  diags.help("rename one of them");
  EXPECT_EQ(diags.error_count(), 1u);
  EXPECT_TRUE(diags.has_errors());
  EXPECT_EQ(diags.render(),
            "f.mbs:2:5: error: 'end N' does not match 'M'\n"
            "  end N;\n"
            "      ^\n"
            "f.mbs:1:7: note: model 'M' begins here\n"
            "  model M\n"
            "        ^\n"
            "help: rename one of them\n");
}

TEST(Engine, ErrorLimitStopsWithAFinalNote) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  diags.set_error_limit(3);
  for (int i = 1; i <= 6; ++i) {
    diags.report(DiagKind::syntax_error, Span{}, {"error " + std::to_string(i)});
    diags.help("help " + std::to_string(i));
  }
  diags.report(DiagKind::syntax_error, Span{}, {"late"}).message = "written into the void";
  EXPECT_EQ(diags.render(),
            "error: error 1\nhelp: help 1\n"
            "error: error 2\nhelp: help 2\n"
            "error: error 3\nhelp: help 3\n"
            "note: too many errors, stopping\n");
  EXPECT_EQ(diags.error_count(), 7u);  // every error counts, shown or not
  EXPECT_TRUE(diags.error_limit_reached());
  EXPECT_EQ(diags.dropped_count(), 4u);
  EXPECT_EQ(diags.diagnostics().size(), 4u);
}

TEST(Engine, ErrorsBelowTheLimitHaveNoFinalNote) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  diags.set_error_limit(2);
  diags.report(DiagKind::syntax_error, Span{}, {"a"});
  diags.report(DiagKind::syntax_error, Span{}, {"b"});
  EXPECT_TRUE(diags.error_limit_reached());
  EXPECT_EQ(diags.dropped_count(), 0u);
  EXPECT_EQ(diags.render(), "error: a\nerror: b\n");
}

TEST(Engine, KindsSeenIncludeDroppedOnes) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  diags.set_error_limit(1);
  diags.report(DiagKind::syntax_error, Span{});
  diags.report(DiagKind::empty_file, Span{});
  std::vector<DiagKind> seen = diags.kinds_seen();
  std::set<DiagKind> kinds(seen.begin(), seen.end());
  EXPECT_EQ(kinds, (std::set<DiagKind>{DiagKind::syntax_error, DiagKind::empty_file,
                                       DiagKind::too_many_errors}));
}

}  // namespace
}  // namespace mbs
