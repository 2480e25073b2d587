// Parsing of .mbs source text into an AST (ANTLR4 grammar in grammar/Mbs.g4).
#pragma once

#include <iosfwd>
#include <memory>
#include <string>

#include "compiler/diag/Diagnostics.h"
#include "compiler/syntax/Ast.h"

namespace mbs {

// Parses the file `file_id` of `sources`. Every problem (invalid UTF-8, invalid characters,
// syntax errors, nesting deeper than kMaxNesting, an empty file) is reported to `diags`; the parser
// never throws and never crashes on any input. Returns nullptr when errors were reported.
// Safe to call from several threads (calls are serialised: ANTLR 4.9's prediction cache is not
// thread-safe). The parse runs on a helper thread with a 256 MB stack.
std::unique_ptr<ast::File> parse_file(const SourceManager& sources, uint32_t file_id,
                                      DiagnosticEngine& diags);

// Parses the whole text of `file_id` as one expression (grammar rule loneExpression), with the
// same checks, limits and messages as expressions in a file: the objectives of a study are
// written this way. `final`, a keyword of modifications only, is a name here. An empty text is
// a syntax error. Returns nullptr when errors were reported.
ast::ExprPtr parse_expression(const SourceManager& sources, uint32_t file_id,
                              DiagnosticEngine& diags);

inline constexpr int kMaxNesting = 256;
// No expression tree the parser returns is deeper than this (a leaf has depth 1; a chain
// a+b+c+... of n operators has depth n+1), so passes may recurse over expressions freely.
// Bracket nesting, if-expressions, for/if equations and nested classes are each limited to
// kMaxNesting levels.
inline constexpr int kMaxExprDepth = 1000;

// Prints the AST as an indented tree (for `mbsc --emit=ast`), one node per line with its
// line:col, e.g.
//   model Pendulum @1:7 "point mass ..."
//     component parameter Real m @2:18 = 1 "mass [kg]"
//     component Real x @5:8 (start = 1)
//     equation @8:3 (m * der(der(x))) = (-((2 * x) * lambda))
// (a leading sign applies to the whole first term, as in Modelica). Within a class: imports,
// extends, nested classes, components, equations, each group in source order.
void print_ast(std::ostream& os, const ast::File& file);
// One expression in fully parenthesised Modelica syntax: every unary and binary operation, range
// and if-expression is wrapped in parentheses: `-a^2` -> "(-(a ^ 2))", `a+b*c` -> "(a + (b * c))",
// `1:n` -> "(1:n)"; calls, references, arrays and literals are not: `der(x)`, `a.b[i, 1]`,
// `{1, 2}`, `[1, 2; 3, 4]`, `1`, `1.5`, `2.0`, `"s"`, `true`.
std::string expr_to_string(const ast::Expr& e);
// A modification as written: "(start = 1, x(fixed = true)) = 2", "= 1".
std::string modification_to_string(const ast::Modification& m);

}  // namespace mbs
