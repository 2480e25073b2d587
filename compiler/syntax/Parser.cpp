// parse_file: .mbs text -> AST (parse_expression: the same for a text that is one expression).
// The steps, each of which may end the parse with diagnostics:
//   1. UTF-8 validation (ANTLR's decoder throws on malformed input, so it never sees any).
//   2. Lexing, checking every token as it comes: invalid characters and unterminated
//      strings/comments (the grammar turns them into tokens so the lexer never fails), bracket
//      nesting deeper than kMaxNesting and operator chains longer than kMaxOperatorsPerLevel are
//      rejected before the recursive-descent parser sees them. Any error here ends the parse.
//   3. Parsing with SLL prediction and a bail-out error strategy; only if that fails, parsing again
//      with full LL prediction and MbsErrorStrategy, which turns ANTLR's errors into messages and
//      recovers statement by statement. A parser subclass limits the nesting of the recursive
//      constructs that have no brackets (if-expressions, for/if equations, classes).
//   4. Conversion of the parse tree to the AST: operator precedence (the grammar leaves operator
//      expressions flat) and the checks the grammar leaves open (end names, prefixes, `a^b^c`,
//      `end` outside subscripts, trees deeper than kMaxExprDepth).
// Steps 2-4 run on a thread with a large stack, so that even inputs at all the limits above
// cannot overflow it (ANTLR's prediction recurses too), and every exception is caught there.
#include "compiler/syntax/Parser.h"

#include <fmt/format.h>
#include <pthread.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>

#include "MbsLexer.h"
#include "MbsParser.h"
#include "antlr4-runtime.h"

namespace mbs {
namespace {

using antlr4::ParserRuleContext;
using antlr4::Token;
using antlr4::tree::ParseTree;
using antlr4::tree::TerminalNode;
using P = grammar::MbsParser;

// Deepest rule-invocation stack the parser may build, whatever the input: a backstop behind the
// bracket pre-scan and the per-construct limits, far above what they let through (~6000).
constexpr size_t kMaxRuleDepth = 16384;
// Stack of the parsing thread. Only touched pages are committed.
constexpr size_t kParserStackBytes = size_t{256} << 20;
// Binary operators in one expression outside brackets beyond which the input is rejected before
// parsing: such a chain would exceed kMaxExprDepth anyway (except for contrived mixes of
// precedence levels), and rejecting it early keeps a 1 MB `a+a+a+...` from costing a parse.
constexpr size_t kMaxOperatorsPerLevel = 20000;

// Unwinds the parse. Whatever there was to say has been reported before it is thrown.
struct ParseAbort {};

// ---------------------------------------------------------------- text helpers

// A token or character as it appears in a message: quoted, control characters escaped, long
// texts shortened.
std::string quote(std::string_view text) {
  constexpr size_t kMaxShown = 32;
  std::string out = "'";
  size_t shown = 0;
  for (size_t i = 0; i < text.size();) {
    if (shown == kMaxShown) {
      out += "...";
      break;
    }
    size_t len = utf8_sequence_length(text, i);
    auto c = static_cast<unsigned char>(text[i]);
    if (len == 0) {
      out += fmt::format("\\x{:02X}", c);
      len = 1;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02X}", c);
    } else {
      out.append(text.substr(i, len));
    }
    i += len;
    ++shown;
  }
  return out + "'";
}

// ---------------------------------------------------------------- reporting

class Reporter {
 public:
  Reporter(uint32_t file, DiagnosticEngine& diags)
      : file_(file), diags_(diags), dropped_at_start_(diags.dropped_count()) {}

  uint32_t file() const { return file_; }
  bool failed() const { return failed_; }
  DiagnosticEngine& diags() { return diags_; }

  Span span(const Token* t) const {
    Span s;
    if (t == nullptr) return s;
    s.file = file_;
    s.line = static_cast<uint32_t>(t->getLine());
    s.col = static_cast<uint32_t>(t->getCharPositionInLine()) + 1;
    s.end_line = s.line;
    s.end_col = s.col;
    if (t->getType() == Token::EOF) return s;
    if (t->getType() == P::STRING) {  // the only token that can span lines
      std::string text = t->getText();
      uint32_t line = s.line, col = s.col - 1;
      for (size_t i = 0; i < text.size();) {
        size_t len = utf8_sequence_length(text, i);
        if (text[i] == '\n') {
          ++line;
          col = 0;
        } else {
          ++col;
        }
        i += len == 0 ? 1 : len;
      }
      s.end_line = line;
      s.end_col = col == 0 ? 1 : col;
      return s;
    }
    size_t n =
        t->getStopIndex() >= t->getStartIndex() ? t->getStopIndex() - t->getStartIndex() + 1 : 1;
    s.end_col = s.col + static_cast<uint32_t>(n) - 1;
    return s;
  }

  Span span(ParserRuleContext* c) const {
    if (c == nullptr) return {};
    Span first = span(c->getStart());
    const Token* stop = c->getStop();
    if (stop == nullptr || c->getStart() == nullptr ||
        stop->getTokenIndex() < c->getStart()->getTokenIndex()) {
      return first;
    }
    Span last = span(stop);
    first.end_line = last.end_line;
    first.end_col = last.end_col;
    return first;
  }

  // The column just after the end of `t` (where a missing ';' belongs).
  Span after(const Token* t) const {
    Span s = span(t);
    s.line = s.end_line;
    s.col = s.end_col + 1;
    s.end_line = s.line;
    s.end_col = s.col;
    return s;
  }

  // Reports an error. Once the engine starts dropping errors (the limit is reached) the parse is
  // pointless: unwind it.
  Diagnostic& error(DiagKind kind, Span span, std::vector<std::string> args = {}) {
    failed_ = true;
    Diagnostic& d = diags_.report(kind, span, std::move(args));
    if (diags_.dropped_count() != dropped_at_start_) throw ParseAbort{};
    return d;
  }
  void syntax(Span span, std::string message) { error(DiagKind::syntax_error, span, {message}); }

 private:
  uint32_t file_;
  DiagnosticEngine& diags_;
  size_t dropped_at_start_;
  bool failed_ = false;
};

// ---------------------------------------------------------------- the guarded parser

// Counts the active invocations of the recursive rules that need no bracket (the pre-scan
// bounds bracket nesting) and stops the parse before they get deep enough to hurt. The check is
// in enterRule, before the base class pushes the new context, so the context stack stays
// consistent while the exception unwinds through the generated rule functions; the count goes
// down in a parse listener because Parser::exitRule is not virtual (the listener is called from
// it, also while unwinding).
class GuardedParser : public P {
 public:
  GuardedParser(antlr4::TokenStream* input, Reporter& reporter)
      : P(input), reporter_(reporter), exits_(*this) {
    active_.assign(getRuleNames().size(), 0);
    addParseListener(&exits_);
  }
  ~GuardedParser() override { removeParseListeners(); }

  void enterRule(ParserRuleContext* ctx, size_t state, size_t rule) override {
    bool nesting = rule == RuleIfExpression || rule == RuleForEquation || rule == RuleIfEquation ||
                   rule == RuleClassDefinition;
    if ((nesting && rule < active_.size() && active_[rule] >= static_cast<size_t>(kMaxNesting)) ||
        depth_ >= kMaxRuleDepth) {
      reporter_.error(DiagKind::nesting_too_deep, reporter_.span(getCurrentToken()),
                      {std::to_string(kMaxNesting)});
      throw ParseAbort{};
    }
    if (rule < active_.size()) ++active_[rule];
    ++depth_;
    P::enterRule(ctx, state, rule);
  }

 private:
  struct ExitCounter : antlr4::tree::ParseTreeListener {
    explicit ExitCounter(GuardedParser& p) : parser(p) {}
    void visitTerminal(antlr4::tree::TerminalNode*) override {}
    void visitErrorNode(antlr4::tree::ErrorNode*) override {}
    void enterEveryRule(ParserRuleContext*) override {}
    void exitEveryRule(ParserRuleContext* ctx) override {
      size_t rule = ctx->getRuleIndex();
      if (rule < parser.active_.size() && parser.active_[rule] > 0) --parser.active_[rule];
      if (parser.depth_ > 0) --parser.depth_;
    }
    GuardedParser& parser;
  };

  Reporter& reporter_;
  std::vector<size_t> active_;  // by rule index
  size_t depth_ = 0;
  ExitCounter exits_;
};

// ---------------------------------------------------------------- syntax error messages

bool has(const antlr4::misc::IntervalSet& set, size_t token_type) {
  return set.contains(token_type);
}

class MbsErrorStrategy : public antlr4::DefaultErrorStrategy {
 public:
  explicit MbsErrorStrategy(Reporter& reporter) : reporter_(reporter) {}

  // In the statement lists (the file, a class body, for/if bodies) a token that cannot start a
  // statement is reported and the statement is skipped up to its ';' ("panic mode"). ANTLR's own
  // recovery would leave the whole rule, i.e. give up on the rest of the class, and report
  // every following statement as an error.
  void sync(antlr4::Parser* p) override {
    if (inErrorRecoveryMode(p)) return;
    size_t rule = p->getContext()->getRuleIndex();
    if (rule != P::RuleStoredDefinition && rule != P::RuleLongClassSpecifier &&
        rule != P::RuleForEquation && rule != P::RuleIfEquation && rule != P::RuleIfStatement &&
        rule != P::RuleForStatement && rule != P::RuleWhileStatement) {
      DefaultErrorStrategy::sync(p);
      return;
    }
    const antlr4::atn::ATN& atn = p->getATN();
    const antlr4::misc::IntervalSet& next = atn.nextTokens(atn.states[p->getState()]);
    size_t la = p->getTokenStream()->LA(1);
    if (next.contains(la) || next.contains(Token::EPSILON)) return;
    report(p, p->getCurrentToken(), p->getContext(), next, Style::Expected);
    skip_statement(p);
  }

 protected:
  // Inside a statement (declaration, equation, import, ...) recovery skips to the statement's
  // ';' (ANTLR's default stops at the first token that could follow any active rule, which in
  // Modelica is nearly every token, and then reports a cascade of errors). When the statement
  // rule itself failed, it cannot match its ';' any more, so the ';' is consumed here.
  void recover(antlr4::Parser* p, std::exception_ptr e) override {
    ParserRuleContext* ctx = p->getContext();
    ParserRuleContext* statement = nullptr;
    for (ParseTree* n = ctx; n != nullptr; n = n->parent) {
      auto* r = dynamic_cast<ParserRuleContext*>(n);
      if (r == nullptr) break;
      size_t rule = r->getRuleIndex();
      if (rule == P::RuleComponentClause || rule == P::RuleImportClause ||
          rule == P::RuleExtendsClause || rule == P::RuleEquation || rule == P::RuleStatement ||
          rule == P::RuleWithinClause) {
        statement = r;
        break;
      }
      if (rule == P::RuleLongClassSpecifier || rule == P::RuleForEquation ||
          rule == P::RuleIfEquation || rule == P::RuleIfStatement || rule == P::RuleForStatement ||
          rule == P::RuleWhileStatement || rule == P::RuleStoredDefinition) {
        break;
      }
    }
    if (statement == nullptr) {
      DefaultErrorStrategy::recover(p, e);
      return;
    }
    antlr4::TokenStream* in = p->getTokenStream();
    // Progress guarantee: recovering twice at the same token consumes it.
    if (in->index() == last_recovery_index_ && in->LA(1) != Token::EOF) p->consume();
    last_recovery_index_ = in->index();
    int depth = 0;
    while (true) {
      size_t la = in->LA(1);
      if (la == Token::EOF) return;
      if (depth == 0 && la == P::SEMICOLON) break;
      if (depth == 0 && (la == P::END || la == P::EQUATION || la == P::ALGORITHM ||
                         la == P::INITIAL || la == P::PUBLIC || la == P::PROTECTED ||
                         la == P::ELSE || la == P::ELSEIF || la == P::ELSEWHEN)) {
        return;
      }
      if (la == P::LPAREN || la == P::LBRACKET || la == P::LBRACE) ++depth;
      if ((la == P::RPAREN || la == P::RBRACKET || la == P::RBRACE) && depth > 0) --depth;
      p->consume();
    }
    if (statement == ctx) {
      p->consume();
      endErrorCondition(p);
    }
  }

  // Deleting a ';' to go on with an expression merges two statements, deleting the '=' of an
  // equation leaves one without '='; both produce a cascade of errors. Report the missing
  // operand instead.
  Token* singleTokenDeletion(antlr4::Parser* p) override {
    size_t la = p->getTokenStream()->LA(1);
    if (la == P::SEMICOLON || la == P::ASSIGN) return nullptr;
    return DefaultErrorStrategy::singleTokenDeletion(p);
  }

  void reportNoViableAlternative(antlr4::Parser* p,
                                 const antlr4::NoViableAltException& e) override {
    // When prediction failed on its first token, the tokens that could start an alternative are
    // a meaningful "expected" set; when it failed further on, only "unexpected" is honest.
    Token* t = e.getOffendingToken();
    if (t != nullptr && e.getStartToken() == t) {
      report(p, t, e.getCtx(), p->getExpectedTokens(), Style::Expected);
    } else {
      report(p, t, e.getCtx(), {}, Style::Unexpected);
    }
  }

  void reportInputMismatch(antlr4::Parser* p, const antlr4::InputMismatchException& e) override {
    report(p, e.getOffendingToken(), e.getCtx(), e.getExpectedTokens(), Style::Expected);
  }

  void reportFailedPredicate(antlr4::Parser* p,
                             const antlr4::FailedPredicateException& e) override {
    report(p, e.getOffendingToken(), e.getCtx(), {}, Style::Unexpected);
  }

  void reportUnwantedToken(antlr4::Parser* p) override {
    if (inErrorRecoveryMode(p)) return;
    beginErrorCondition(p);
    // With a short list of what would have fitted ("',' or ')'") say it; otherwise the token
    // simply does not belong here.
    antlr4::misc::IntervalSet expected = getExpectedTokens(p);
    bool short_list = expected.size() <= 3 && !expected.contains(Token::EPSILON);
    report(p, p->getCurrentToken(), p->getContext(), expected,
           short_list ? Style::Expected : Style::Unexpected);
  }

  void reportMissingToken(antlr4::Parser* p) override {
    if (inErrorRecoveryMode(p)) return;
    beginErrorCondition(p);
    report(p, p->getCurrentToken(), p->getContext(), getExpectedTokens(p), Style::Expected);
  }

 private:
  enum class Style { Expected, Unexpected };

  static std::string token_name(const antlr4::dfa::Vocabulary& vocabulary, ssize_t type) {
    switch (type) {
      case -1:
        return "end of file";
      case P::IDENT:
        return "a name";
      case P::UNSIGNED_NUMBER:
        return "a number";
      case P::STRING:
        return "a string";
      case P::SUBSCRIPT_END:
        return "'end'";
      default:
        break;
    }
    std::string literal = vocabulary.getLiteralName(static_cast<size_t>(type));
    return literal.empty() ? vocabulary.getDisplayName(static_cast<size_t>(type)) : literal;
  }

  static std::string found(const Token* t) {
    if (t == nullptr || t->getType() == Token::EOF) return "end of file";
    return quote(t->getText());
  }

  // What the parser wanted, in words; empty if that is not worth saying.
  static std::string describe(const antlr4::misc::IntervalSet& expected, size_t rule,
                              const Token* previous, const antlr4::Parser* p) {
    auto in = [&](size_t type) { return has(expected, type); };
    if (in(P::CONNECT) || in(P::IMPORT)) return "";  // statement lists: "unexpected" says it
    if (in(P::IDENT) && in(P::UNSIGNED_NUMBER)) return "an expression";
    if (in(P::MODEL) && !in(P::IDENT)) return "a class definition";
    if (rule == P::RuleComponentClause && in(P::IDENT)) return "a component name";
    if (in(P::EACH) && in(P::FINAL)) return in(P::RPAREN) ? "a modifier or ')'" : "a modifier";
    std::vector<ssize_t> types;
    for (ssize_t t : expected.toList()) {
      if (t != static_cast<ssize_t>(Token::EPSILON)) types.push_back(t);
    }
    if (types.empty() || types.size() > 4) return "";
    if (types.size() == 1 && types[0] == P::IDENT) {
      switch (rule) {
        case P::RuleComponentDeclaration:
          return "a component name";
        case P::RuleTypeSpecifier:
          return "a type name";
        case P::RuleForIndex:
          return "a loop index name";
        case P::RuleLongClassSpecifier:
          if (previous != nullptr && previous->getType() == P::END) return "the class name";
          return "a class name";
        case P::RuleClassDefinition:
          return "a class name";
        default:
          return "a name";
      }
    }
    // "',' or ')'" reads better than the token numbering's "')' or ','".
    std::stable_partition(types.begin(), types.end(), [](ssize_t t) { return t == P::COMMA; });
    std::string out;
    for (size_t i = 0; i < types.size(); ++i) {
      if (i > 0) out += i + 1 == types.size() ? " or " : ", ";
      out += token_name(p->getVocabulary(), types[i]);
    }
    return out;
  }

  // " after declaration" and the like: which construct a ';' would have ended.
  static std::string after_phrase(const antlr4::misc::IntervalSet& expected,
                                  antlr4::RuleContext* ctx, const Token* previous) {
    if (ctx == nullptr) return "";
    if (previous != nullptr && previous->getType() == P::END && !has(expected, P::SEMICOLON))
      return " after 'end'";
    if (!has(expected, P::SEMICOLON)) return "";
    switch (ctx->getRuleIndex()) {
      case P::RuleComponentClause:
        return " after declaration";
      case P::RuleEquation:
        return " after equation";
      case P::RuleStatement:
        return " after statement";
      case P::RuleImportClause:
        return " after import";
      case P::RuleExtendsClause:
        return " after extends clause";
      case P::RuleWithinClause:
        return " after within clause";
      case P::RuleLongClassSpecifier:
        return " after annotation";
      case P::RuleClassDefinition: {
        auto* c = static_cast<P::ClassDefinitionContext*>(ctx);
        if (auto* l = c->longClassSpecifier(); l != nullptr && l->IDENT().size() == 2)
          return " after 'end " + l->IDENT(1)->getText() + "'";
        if (auto* s = c->shortClassSpecifier(); s != nullptr && s->IDENT() != nullptr)
          return " after the definition of '" + s->IDENT()->getText() + "'";
        return "";
      }
      default:
        return "";
    }
  }

  static bool inside(antlr4::RuleContext* ctx, size_t rule) {
    for (antlr4::RuleContext* n = ctx; n != nullptr;
         n = dynamic_cast<antlr4::RuleContext*>(n->parent))
      if (n->getRuleIndex() == rule) return true;
    return false;
  }

  // At the end of the file with a block still open: name the block.
  bool report_missing_end(antlr4::RuleContext* ctx, const Span& where) {
    for (ParseTree* n = ctx; n != nullptr; n = n->parent) {
      if (auto* l = dynamic_cast<P::LongClassSpecifierContext*>(n)) {
        auto* def = dynamic_cast<P::ClassDefinitionContext*>(l->parent);
        if (l->IDENT().empty() || def == nullptr || def->classPrefix() == nullptr) return false;
        if (report_nested_mismatch(l)) return true;
        std::string name = l->IDENT(0)->getText();
        std::string kind = def->classPrefix()->getText();
        reporter_.syntax(where, "missing 'end " + name + ";' for " + kind + " '" + name + "'");
        reporter_.diags().note(reporter_.span(l->IDENT(0)->getSymbol()),
                               kind + " '" + name + "' begins here");
        return true;
      }
      if (auto* f = dynamic_cast<P::ForEquationContext*>(n)) {
        reporter_.syntax(where, "missing 'end for;'");
        reporter_.diags().note(reporter_.span(f->getStart()), "'for' begins here");
        return true;
      }
      if (auto* i = dynamic_cast<P::IfEquationContext*>(n)) {
        reporter_.syntax(where, "missing 'end if;'");
        reporter_.diags().note(reporter_.span(i->getStart()), "'if' begins here");
        return true;
      }
      if (auto* f = dynamic_cast<P::ForStatementContext*>(n)) {
        reporter_.syntax(where, "missing 'end for;'");
        reporter_.diags().note(reporter_.span(f->getStart()), "'for' begins here");
        return true;
      }
      if (auto* i = dynamic_cast<P::IfStatementContext*>(n)) {
        reporter_.syntax(where, "missing 'end if;'");
        reporter_.diags().note(reporter_.span(i->getStart()), "'if' begins here");
        return true;
      }
      if (auto* w = dynamic_cast<P::WhileStatementContext*>(n)) {
        reporter_.syntax(where, "missing 'end while;'");
        reporter_.diags().note(reporter_.span(w->getStart()), "'while' begins here");
        return true;
      }
    }
    return false;
  }

  // Consumes the statement that starts at LT(1): up to and including its ';' at bracket depth
  // 0, or up to a keyword that ends a statement list.
  static void skip_statement(antlr4::Parser* p) {
    antlr4::TokenStream* in = p->getTokenStream();
    Token* first = in->LT(1);
    if (first->getType() == Token::EOF) return;
    p->consume();
    int depth = 0;
    while (true) {
      size_t la = in->LA(1);
      if (la == Token::EOF) return;
      if (depth == 0 && la == P::SEMICOLON) {
        p->consume();
        return;
      }
      if (depth == 0 && (la == P::END || la == P::EQUATION || la == P::ALGORITHM ||
                         la == P::INITIAL || la == P::PUBLIC || la == P::PROTECTED ||
                         la == P::ELSE || la == P::ELSEIF || la == P::ELSEWHEN)) {
        return;
      }
      if (la == P::LPAREN || la == P::LBRACKET || la == P::LBRACE) ++depth;
      if ((la == P::RPAREN || la == P::RBRACKET || la == P::RBRACE) && depth > 0) --depth;
      p->consume();
    }
  }

  // `model M  model N ... end M;` then the end of the file: the real mistake is the missing
  // `end N;`, which made `end M` close N.
  bool report_nested_mismatch(P::LongClassSpecifierContext* outer) {
    std::string outer_name = outer->IDENT(0)->getText();
    for (auto* e : outer->element()) {
      auto* def = e->classDefinition();
      auto* inner = def != nullptr ? def->longClassSpecifier() : nullptr;
      if (inner == nullptr || inner->IDENT().size() != 2) continue;
      if (inner->IDENT(1)->getText() != outer_name || inner->IDENT(0)->getText() == outer_name)
        continue;
      std::string name = inner->IDENT(0)->getText();
      std::string kind = def->classPrefix()->getText();
      reporter_.error(DiagKind::end_name_mismatch, reporter_.span(inner->IDENT(1)->getSymbol()),
                      {outer_name, name});
      reporter_.diags().note(reporter_.span(inner->IDENT(0)->getSymbol()),
                             kind + " '" + name + "' begins here");
      reporter_.diags().help("add 'end " + name + ";' before 'end " + outer_name + ";'");
      return true;
    }
    return false;
  }

  void report(antlr4::Parser* p, Token* t, antlr4::RuleContext* ctx,
              const antlr4::misc::IntervalSet& expected, Style style) {
    const Token* previous = nullptr;
    if (t != nullptr && t->getTokenIndex() > 0 && t->getTokenIndex() != INVALID_INDEX) {
      previous = p->getTokenStream()->get(t->getTokenIndex() - 1);
    }
    const bool at_eof = t == nullptr || t->getType() == Token::EOF;
    // After an error, ANTLR's complaints at the end of the file are nearly always consequences
    // of it (the recovery skipped an `end`, a comment ran to the end, ...).
    if (at_eof && reporter_.failed()) return;

    if (!at_eof && t->getType() == P::UNSUPPORTED_KEYWORD) {
      reporter_.error(DiagKind::unsupported, reporter_.span(t),
                      {"the Modelica keyword " + quote(t->getText())});
      if (t->getText() == "expandable")
        reporter_.diags().help(
            "expandable connectors (Modelica 3.6, section 9.1.3) are not supported yet; declare "
            "every variable of the connector");
      return;
    }
    if (!at_eof && t->getType() == P::COLON_EQ && !inside(ctx, P::RuleStatement)) {
      reporter_.syntax(reporter_.span(t), "':=' outside an algorithm section");
      reporter_.diags().help(
          "an equation is written 'a = b;'; assignments ':=' belong in the 'algorithm' section of "
          "a function");
      return;
    }
    if (!at_eof && t->getType() == P::ASSIGN && inside(ctx, P::RuleStatement)) {
      reporter_.syntax(reporter_.span(t), "expected ':=', found '='");
      reporter_.diags().help("an algorithm assigns with ':=' (a = b is an equation)");
      return;
    }
    if (!at_eof && t->getType() == P::ASSIGN && ctx != nullptr &&
        (ctx->getRuleIndex() == P::RuleComponentDeclaration ||
         ctx->getRuleIndex() == P::RuleComponentClause)) {
      // `Real x; y = 1;` before `equation`: `y` was taken for a type.
      reporter_.syntax(reporter_.span(t), "expected a component name, found '='");
      reporter_.diags().help("equations belong in an 'equation' section");
      return;
    }

    // A missing token belongs after the previous token when the next one is on a later line:
    // that is where the user has to type it.
    Span where = reporter_.span(t);
    const bool wants_closer = has(expected, P::SEMICOLON) || has(expected, P::RPAREN) ||
                              has(expected, P::RBRACKET) || has(expected, P::RBRACE);
    if (previous != nullptr && (at_eof || (style == Style::Expected && wants_closer &&
                                           t->getLine() > reporter_.span(previous).end_line))) {
      where = reporter_.after(previous);
    }

    // The end of the file where a statement list could have been closed with `end`.
    const size_t rule = ctx != nullptr ? ctx->getRuleIndex() : INVALID_INDEX;
    if (at_eof && has(expected, P::END) &&
        (rule == P::RuleLongClassSpecifier || rule == P::RuleForEquation ||
         rule == P::RuleIfEquation || rule == P::RuleForStatement || rule == P::RuleIfStatement ||
         rule == P::RuleWhileStatement) &&
        report_missing_end(ctx, where)) {
      return;
    }

    std::string want =
        style == Style::Expected ? describe(expected, rule, previous, p) : std::string();
    if (want.empty()) {
      reporter_.syntax(where, "unexpected " + found(t));
      return;
    }
    if (want == "the class name" && ctx != nullptr) {
      auto* l = dynamic_cast<P::LongClassSpecifierContext*>(ctx);
      if (l != nullptr && !l->IDENT().empty()) want += " '" + l->IDENT(0)->getText() + "'";
    }
    // "expected ';' after declaration" even where a ',' or a '(' could also have come: the ';' is
    // what is missing in practice.
    std::string after = after_phrase(expected, ctx, previous);
    if (!after.empty() && has(expected, P::SEMICOLON)) want = "';'";
    reporter_.syntax(where, "expected " + want + after + ", found " + found(t));
    if (rule == P::RuleStatement && want == "':='" && !at_eof && t->getType() == P::LPAREN) {
      reporter_.diags().help(
          "a statement is an assignment 'x := expression;' or a call of assert(...)");
    }
    if (rule == P::RuleEquation && want == "'='" && !at_eof && t->getType() == P::SEMICOLON) {
      reporter_.diags().help(
          "an equation has the form 'expression = expression;' (the only call equation is "
          "reinit(x, e), inside a when-equation)");
    }
  }

  Reporter& reporter_;
  size_t last_recovery_index_ = static_cast<size_t>(-1);
};

// Anything that still reaches ANTLR's listener interface (the strategy above reports the rest
// itself): rewrite ANTLR's wording into ours.
class FallbackListener : public antlr4::BaseErrorListener {
 public:
  explicit FallbackListener(Reporter& reporter) : reporter_(reporter) {}

  void syntaxError(antlr4::Recognizer*, Token* offending, size_t line, size_t column,
                   const std::string& message, std::exception_ptr) override {
    Span where = offending != nullptr ? reporter_.span(offending) : Span{};
    if (!where.valid()) {
      where = Span{reporter_.file(), static_cast<uint32_t>(line), static_cast<uint32_t>(column) + 1,
                   static_cast<uint32_t>(line), static_cast<uint32_t>(column) + 1};
    }
    std::string shown = offending == nullptr || offending->getType() == Token::EOF
                            ? "end of file"
                            : quote(offending->getText());
    auto starts = [&](const char* prefix) { return message.rfind(prefix, 0) == 0; };
    if (starts("mismatched input")) {
      auto pos = message.find(" expecting ");
      std::string want = pos == std::string::npos ? "" : message.substr(pos + 11);
      reporter_.syntax(
          where, want.empty() ? "unexpected " + shown : "expected " + want + ", found " + shown);
    } else if (starts("missing ")) {
      auto pos = message.find(" at ");
      reporter_.syntax(where, "expected " + message.substr(8, pos - 8) + ", found " + shown);
    } else if (starts("extraneous input") || starts("no viable alternative")) {
      reporter_.syntax(where, "unexpected " + shown);
    } else {
      reporter_.syntax(where, message);
    }
  }

 private:
  Reporter& reporter_;
};

// ---------------------------------------------------------------- parse tree -> AST

// Ends the conversion of one statement (declaration, equation, ...) after an error that leaves
// nothing sensible to build; the next statement is converted normally.
struct StatementFailed {};

Token* token_of(ParseTree* node) {
  auto* t = dynamic_cast<TerminalNode*>(node);
  return t != nullptr ? t->getSymbol() : nullptr;
}

size_t type_of(ParseTree* node) {
  Token* t = token_of(node);
  return t != nullptr ? t->getType() : antlr4::Token::INVALID_TYPE;
}

ast::ExprPtr clone(const ast::Expr& e);

std::vector<ast::ExprPtr> clone_all(const std::vector<ast::ExprPtr>& v) {
  std::vector<ast::ExprPtr> out;
  out.reserve(v.size());
  for (const auto& e : v) out.push_back(clone(*e));
  return out;
}

ast::ExprPtr clone(const ast::Expr& e) {
  auto c = std::make_unique<ast::Expr>();
  c->kind = e.kind;
  c->span = e.span;
  c->number = e.number;
  c->is_integer = e.is_integer;
  c->boolean = e.boolean;
  c->text = e.text;
  c->op = e.op;
  for (const auto& part : e.ref) {
    c->ref.push_back(ast::RefPart{part.name, clone_all(part.subscripts), part.span});
  }
  c->args = clone_all(e.args);
  c->arg_names = e.arg_names;
  c->arg_spans = e.arg_spans;
  for (const auto& row : e.rows) c->rows.push_back(clone_all(row));
  return c;
}

class Builder {
 public:
  explicit Builder(Reporter& reporter) : r_(reporter) {}

  std::unique_ptr<ast::File> file(P::StoredDefinitionContext* ctx) {
    auto f = std::make_unique<ast::File>();
    f->file_id = r_.file();
    if (auto* w = ctx->withinClause(); w != nullptr && w->name() != nullptr) {
      f->within = dotted(w->name());
    }
    for (auto* c : ctx->classDefinition()) {
      if (auto def = class_definition(c)) f->classes.push_back(std::move(def));
    }
    return f;
  }

  ast::ExprPtr lone_expression(P::LoneExpressionContext* ctx) { return expr(ctx->expression()).e; }

 private:
  // An expression under construction and its depth (a leaf is 1).
  struct Built {
    ast::ExprPtr e;
    int depth = 1;
  };

  // ---------------------------------------------------------------- classes and elements

  std::unique_ptr<ast::ClassDef> class_definition(P::ClassDefinitionContext* ctx,
                                                  bool replaceable = false) {
    auto def = std::make_unique<ast::ClassDef>();
    def->kind = class_kind(ctx->classPrefix());
    if (auto* k = ctx->constrainingClause()) {
      if (!replaceable)
        r_.syntax(r_.span(k->CONSTRAINEDBY()->getSymbol()),
                  "'constrainedby' follows only a replaceable element");
      if (k->classModification() != nullptr)
        r_.error(DiagKind::unsupported, r_.span(k->classModification()),
                 {"a modification of the constraining class"});
    }
    if (auto* s = ctx->shortClassSpecifier()) {
      def->name = s->IDENT()->getText();
      def->span = r_.span(s->IDENT()->getSymbol());
      try {
        if (s->ENUMERATION() != nullptr) {
          def->is_enumeration = true;
          def->enumeration_open = s->COLON() != nullptr;
          if (auto* list = s->enumList())
            for (auto* lit : list->enumerationLiteral()) {
              def->enum_literals.push_back(lit->IDENT()->getText());
              def->enum_spans.push_back(r_.span(lit->IDENT()->getSymbol()));
              def->enum_descriptions.push_back(string_comment(lit->comment()->stringComment()));
            }
          def->description = string_comment(s->comment()->stringComment());
          return def;
        }
        def->short_base = type_name(s->typeSpecifier());
        if (auto* d = s->arraySubscripts()) def->short_dims = subscripts(d);
        if (auto* m = s->classModification()) {
          def->short_mod = std::make_unique<ast::Modification>();
          def->short_mod->args = class_modification(m);
          def->short_mod->span = r_.span(m);
        }
        def->description = string_comment(s->comment()->stringComment());
      } catch (const StatementFailed&) {
      }
      return def;
    }

    auto* l = ctx->longClassSpecifier();
    def->name = l->IDENT(0)->getText();
    def->span = r_.span(l->IDENT(0)->getSymbol());
    def->description = string_comment(l->stringComment());
    bool is_protected = false;
    bool after_end = false;
    // `initial` just seen (it prefixes the next section keyword); inside `initial equation`
    Token* initial_keyword = nullptr;
    bool in_initial = false;
    for (ParseTree* child : l->children) {
      switch (type_of(child)) {
        case P::PUBLIC:
          is_protected = false;
          in_initial = false;
          continue;
        case P::PROTECTED:
          is_protected = true;
          in_initial = false;
          continue;
        case P::END:
          after_end = true;
          continue;
        case P::INITIAL:
          initial_keyword = token_of(child);
          continue;
        case P::EQUATION:
          in_initial = initial_keyword != nullptr;
          if (in_initial) def->initial_spans.push_back(r_.span(initial_keyword));
          initial_keyword = nullptr;
          continue;
        case P::ALGORITHM:
          in_initial = initial_keyword != nullptr;
          if (in_initial) {
            def->initial_algorithm_spans.push_back(r_.span(initial_keyword));
            def->initial_algorithm_starts.push_back(def->initial_algorithm.size());
          } else {
            def->algorithm_spans.push_back(r_.span(token_of(child)));
            def->algorithm_starts.push_back(def->algorithm.size());
          }
          initial_keyword = nullptr;
          continue;
        case P::IDENT:
          if (after_end) check_end_name(*def, ctx, token_of(child));
          continue;
        default:
          break;
      }
      if (auto* e = dynamic_cast<P::ElementContext*>(child)) {
        element(*def, e, is_protected);
      } else if (auto* eq = dynamic_cast<P::EquationContext*>(child)) {
        // equations only follow `equation` or `initial equation`
        equation(in_initial ? def->initial_equations : def->equations, eq);
      } else if (auto* st = dynamic_cast<P::StatementContext*>(child)) {
        // statements only follow `algorithm` or `initial algorithm`
        statement(in_initial ? def->initial_algorithm : def->algorithm, st);
      } else if (auto* an = dynamic_cast<P::AnnotationContext*>(child)) {
        def->mbs_element = mbs_element(an);
        experiment(*def, an);
      }
    }
    return def;
  }

  // The one class annotation mbs reads: `annotation(__mbs_element = "Revolute")` marks a class of
  // the mechanics library as a built-in multibody element (docs/mechanics.md). Everything else in
  // an annotation is ignored.
  static std::string mbs_element(P::AnnotationContext* an) {
    for (auto* a : an->classModification()->argument()) {
      if (a->name()->getText() != "__mbs_element" || a->modification() == nullptr) continue;
      auto* e = a->modification()->expression();
      if (e == nullptr) continue;
      std::string t = e->getText();
      if (t.size() >= 2 && t.front() == '"' && t.back() == '"') return t.substr(1, t.size() - 2);
    }
    return {};
  }

  // `experiment(StartTime, StopTime, Interval, Tolerance)` in a class annotation (Modelica 3.6,
  // section 18.4; docs/language.md, "The experiment annotation"): numbers, written as literals
  // with an optional sign. A value that is not such a number, a setting mbs does not know, or a
  // value out of range (Interval and Tolerance must be positive, StopTime after StartTime) is a
  // warning and ignored; vendor settings (`__Name...`) are ignored silently.
  void experiment(ast::ClassDef& def, P::AnnotationContext* an) {
    for (auto* a : an->classModification()->argument()) {
      if (a->name()->getText() != "experiment" || a->modification() == nullptr ||
          a->modification()->classModification() == nullptr)
        continue;
      ast::ClassDef::Experiment ex;
      Span stop_at = r_.span(a);
      for (auto* x : a->modification()->classModification()->argument()) {
        const std::string key = x->name()->getText();
        const Span at = r_.span(x);
        double* slot = key == "StartTime"   ? &ex.start_time
                       : key == "StopTime"  ? &ex.stop_time
                       : key == "Interval"  ? &ex.interval
                       : key == "Tolerance" ? &ex.tolerance
                                            : nullptr;
        if (slot == nullptr) {
          if (key.rfind("__", 0) != 0)
            r_.diags().report(DiagKind::experiment_ignored, at,
                              {"'" + key + "'",
                               "mbs knows StartTime, StopTime, Interval and "
                               "Tolerance"});
          continue;
        }
        auto* e = x->modification() != nullptr ? x->modification()->expression() : nullptr;
        const std::string text = e != nullptr ? e->getText() : "";
        char* end = nullptr;
        const double value = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
        if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(value)) {
          r_.diags().report(DiagKind::experiment_ignored, at,
                            {key, "its value must be a number (a literal, not an expression)"});
          continue;
        }
        if ((slot == &ex.interval || slot == &ex.tolerance) && !(value > 0.0)) {
          r_.diags().report(DiagKind::experiment_ignored, at,
                            {key + " = " + text, "it must be positive"});
          continue;
        }
        if (slot == &ex.start_time && value != 0.0) {
          r_.diags().report(DiagKind::experiment_ignored, at,
                            {key + " = " + text,
                             "a run of mbs starts at time 0 (StopTime is still the end time)"});
          continue;
        }
        *slot = value;
        if (slot == &ex.stop_time) stop_at = at;
      }
      if (!(ex.stop_time > 0.0) && !std::isnan(ex.stop_time)) {
        r_.diags().report(DiagKind::experiment_ignored, stop_at,
                          {"StopTime", "it must be after the start time 0"});
        ex.stop_time = std::numeric_limits<double>::quiet_NaN();
      }
      def.experiment = ex;
    }
  }

  void check_end_name(const ast::ClassDef& def, P::ClassDefinitionContext* ctx, Token* end_name) {
    if (end_name->getText() == def.name) return;
    std::string kind = ctx->classPrefix()->getText();
    r_.error(DiagKind::end_name_mismatch, r_.span(end_name), {end_name->getText(), def.name});
    r_.diags().note(def.span, kind + " '" + def.name + "' begins here");
  }

  static ast::ClassKind class_kind(P::ClassPrefixContext* ctx) {
    switch (ctx->getStart()->getType()) {
      case P::CONNECTOR:
        return ast::ClassKind::Connector;
      case P::RECORD:
        return ast::ClassKind::Record;
      case P::BLOCK:
        return ast::ClassKind::Block;
      case P::PACKAGE:
        return ast::ClassKind::Package;
      case P::TYPE:
        return ast::ClassKind::Type;
      case P::FUNCTION:
        return ast::ClassKind::Function;
      case P::CLASS:
        return ast::ClassKind::Class;
      default:
        return ast::ClassKind::Model;
    }
  }

  void element(ast::ClassDef& def, P::ElementContext* ctx, bool is_protected) {
    try {
      if (auto* i = ctx->importClause()) {
        if (auto* list = i->importList()) {
          // `import A.B.{C, D};` is `import A.B.C; import A.B.D;`
          for (auto* id : list->IDENT()) {
            ast::Import imp = import_clause(i);
            imp.path += "." + id->getText();
            imp.span = r_.span(id->getSymbol());
            def.imports.push_back(std::move(imp));
          }
        } else {
          def.imports.push_back(import_clause(i));
        }
      } else if (auto* e = ctx->extendsClause()) {
        ast::Extends ext;
        ext.base = type_name(e->typeSpecifier());
        ext.span = r_.span(e->typeSpecifier());
        if (auto* m = e->classModification()) {
          ext.mod = std::make_unique<ast::Modification>();
          ext.mod->args = class_modification(m);
          ext.mod->span = r_.span(m);
        }
        def.extends.push_back(std::move(ext));
      } else if (auto* c = ctx->classDefinition()) {
        const ast::Component flags = element_prefixes(ctx->elementPrefix());
        if (flags.inner || flags.outer || flags.redeclare)
          r_.error(DiagKind::unsupported, r_.span(ctx->elementPrefix(0)),
                   {flags.redeclare ? "the redeclaration of a class as an element (Modelica 3.6, "
                                      "section 7.3)"
                                    : "'inner' or 'outer' on a class definition (Modelica 3.6, "
                                      "section 5.4)"});
        if (auto nested = class_definition(c, flags.replaceable))
          def.classes.push_back(std::move(nested));
      } else if (auto* cc = ctx->componentClause()) {
        const ast::Component flags = element_prefixes(ctx->elementPrefix());
        const size_t first = def.components.size();
        component_clause(def, cc, is_protected);
        std::string constrainedby;
        Span constrainedby_span;
        if (auto* k = cc->constrainingClause()) {
          constrainedby = dotted(k->typeSpecifier()->name());
          constrainedby_span = r_.span(k->typeSpecifier());
          if (!flags.replaceable)
            r_.syntax(r_.span(k->CONSTRAINEDBY()->getSymbol()),
                      "'constrainedby' follows only a replaceable element");
          if (k->classModification() != nullptr)
            r_.error(DiagKind::unsupported, r_.span(k->classModification()),
                     {"a modification of the constraining class"});
        }
        for (size_t k = first; k < def.components.size(); ++k) {
          ast::Component& comp = def.components[k];
          comp.replaceable = flags.replaceable;
          comp.redeclare = flags.redeclare;
          comp.final_ = flags.final_;
          comp.inner = flags.inner;
          comp.outer = flags.outer;
          comp.constrainedby = constrainedby;
          comp.constrainedby_span = constrainedby_span;
        }
      }
    } catch (const StatementFailed&) {
    }
  }

  ast::Import import_clause(P::ImportClauseContext* ctx) {
    ast::Import imp;
    imp.path = dotted(ctx->name());
    imp.span = r_.span(ctx->name());
    if (ctx->ASSIGN() != nullptr) {
      imp.alias = ctx->IDENT()->getText();
    } else if (ctx->DOT_STAR() != nullptr || ctx->STAR() != nullptr) {
      imp.wildcard = true;
      Span last = r_.span(ctx->DOT_STAR() != nullptr ? ctx->DOT_STAR()->getSymbol()
                                                     : ctx->STAR()->getSymbol());
      imp.span.end_line = last.end_line;
      imp.span.end_col = last.end_col;
    }
    return imp;
  }

  void component_clause(ast::ClassDef& def, P::ComponentClauseContext* ctx, bool is_protected) {
    ast::Component proto;
    proto.is_protected = is_protected;
    prefixes(proto, ctx->typePrefix());
    proto.type_name = type_name(ctx->typeSpecifier());
    proto.type_span = r_.span(ctx->typeSpecifier());
    std::vector<ast::ExprPtr> type_dims;
    if (auto* s = ctx->arraySubscripts()) type_dims = subscripts(s);

    for (auto* d : ctx->componentDeclaration()) {
      try {
        ast::Component c;
        c.name = d->IDENT()->getText();
        c.span = r_.span(d->IDENT()->getSymbol());
        c.type_name = proto.type_name;
        c.type_span = proto.type_span;
        c.type_dims = clone_all(type_dims);
        c.variability = proto.variability;
        c.causality = proto.causality;
        c.flow = proto.flow;
        c.stream = proto.stream;
        c.is_protected = proto.is_protected;
        if (auto* s = d->arraySubscripts()) c.dims = subscripts(s);
        if (auto* m = d->modification()) c.mod = modification(m);
        if (auto* ca = d->conditionAttribute()) c.condition = expr(ca->expression()).e;
        c.description = string_comment(d->comment()->stringComment());
        def.components.push_back(std::move(c));
      } catch (const StatementFailed&) {
      }
    }
  }

  // The element prefixes redeclare, final, inner, outer, replaceable (each at most once), as the
  // flags of a Component.
  ast::Component element_prefixes(const std::vector<P::ElementPrefixContext*>& list) {
    ast::Component c;
    for (auto* p : list) {
      Token* t = p->getStart();
      bool* flag = t->getType() == P::REDECLARE ? &c.redeclare
                   : t->getType() == P::FINAL   ? &c.final_
                   : t->getType() == P::INNER   ? &c.inner
                   : t->getType() == P::OUTER   ? &c.outer
                                                : &c.replaceable;
      if (*flag) r_.syntax(r_.span(t), "duplicate prefix '" + t->getText() + "'");
      *flag = true;
    }
    return c;
  }

  // Prefixes may come in any order; each group (variability, causality, flow/stream) at most
  // once.
  void prefixes(ast::Component& c, const std::vector<P::TypePrefixContext*>& list) {
    Token* variability = nullptr;
    Token* causality = nullptr;
    Token* flow = nullptr;
    for (auto* p : list) {
      Token* t = p->getStart();
      Token** slot = nullptr;
      switch (t->getType()) {
        case P::PARAMETER:
        case P::CONSTANT:
        case P::DISCRETE:
          slot = &variability;
          break;
        case P::INPUT:
        case P::OUTPUT:
          slot = &causality;
          break;
        default:
          slot = &flow;
          break;
      }
      if (*slot != nullptr) {
        std::string first = (*slot)->getText(), second = t->getText();
        r_.syntax(r_.span(t), first == second
                                  ? "duplicate prefix '" + second + "'"
                                  : "conflicting prefixes '" + first + "' and '" + second + "'");
        continue;
      }
      *slot = t;
      switch (t->getType()) {
        case P::PARAMETER:
          c.variability = ast::Variability::Parameter;
          break;
        case P::CONSTANT:
          c.variability = ast::Variability::Constant;
          break;
        case P::DISCRETE:
          c.variability = ast::Variability::Discrete;
          break;
        case P::INPUT:
          c.causality = ast::Causality::Input;
          break;
        case P::OUTPUT:
          c.causality = ast::Causality::Output;
          break;
        case P::FLOW:
          c.flow = true;
          break;
        case P::STREAM:
          c.stream = true;
          break;
        default:
          break;
      }
    }
  }

  // ---------------------------------------------------------------- modifications

  std::unique_ptr<ast::Modification> modification(P::ModificationContext* ctx) {
    auto m = std::make_unique<ast::Modification>();
    m->span = r_.span(ctx);
    if (auto* c = ctx->classModification()) m->args = class_modification(c);
    if (auto* e = ctx->expression()) m->value = expr(e).e;
    return m;
  }

  // `redeclare [replaceable] C sub(...)` inside a modification: the new declaration of `sub`
  // (Modelica 3.6, section 7.3). The redeclaration of a class is refused here.
  std::shared_ptr<const ast::Component> redeclaration(P::ElementRedeclarationContext* rd,
                                                      bool replaceable) {
    if (rd->classPrefix() != nullptr) {
      r_.error(DiagKind::unsupported, r_.span(rd),
               {"the redeclaration of a class (Modelica 3.6, section 7.3; redeclare a component "
                "instead)"});
      throw StatementFailed{};
    }
    auto c = std::make_shared<ast::Component>();
    prefixes(*c, rd->typePrefix());
    c->type_name = dotted(rd->typeSpecifier()->name());
    c->type_span = r_.span(rd->typeSpecifier());
    if (auto* s = rd->arraySubscripts()) c->type_dims = subscripts(s);
    auto* d = rd->componentDeclaration();
    c->name = d->IDENT()->getText();
    c->span = r_.span(d->IDENT()->getSymbol());
    if (auto* s = d->arraySubscripts()) c->dims = subscripts(s);
    if (auto* m = d->modification()) c->mod = modification(m);
    if (auto* ca = d->conditionAttribute())
      r_.syntax(r_.span(ca),
                "a redeclaration cannot have a condition (it keeps the one of the "
                "declaration it replaces, Modelica 3.6, section 4.4.5)");
    c->description = string_comment(d->comment()->stringComment());
    c->redeclare = true;
    c->replaceable = replaceable;
    if (auto* k = rd->constrainingClause()) {
      c->constrainedby = dotted(k->typeSpecifier()->name());
      c->constrainedby_span = r_.span(k->typeSpecifier());
    }
    return c;
  }

  std::vector<ast::ModArg> class_modification(P::ClassModificationContext* ctx) {
    std::vector<ast::ModArg> args;
    for (auto* a : ctx->argument()) {
      ast::ModArg arg;
      arg.each = a->EACH() != nullptr;
      arg.final_ = a->FINAL() != nullptr;
      if (auto* rd = a->elementRedeclaration()) {
        try {
          arg.redeclare = redeclaration(rd, a->REPLACEABLE() != nullptr);
        } catch (const StatementFailed&) {
          continue;
        }
        arg.path.push_back(arg.redeclare->name);
        arg.span = arg.redeclare->span;
        arg.mod = std::make_unique<ast::Modification>();
        arg.mod->span = arg.span;
        args.push_back(std::move(arg));
        continue;
      }
      for (auto* id : a->name()->IDENT()) arg.path.push_back(id->getText());
      arg.span = r_.span(a->name());
      if (auto* m = a->modification()) {
        arg.mod = modification(m);
      } else {
        std::string name = dotted(a->name());
        r_.syntax(arg.span, "modification of '" + name + "' has no value; write '" + name +
                                " = ...' or '" + name + "(...)'");
        arg.mod = std::make_unique<ast::Modification>();
        arg.mod->span = arg.span;
      }
      args.push_back(std::move(arg));
    }
    return args;
  }

  // ---------------------------------------------------------------- equations

  void equation(ast::EquationList& out, P::EquationContext* ctx) {
    try {
      ast::Equation eq;
      eq.description = string_comment(ctx->comment()->stringComment());
      if (auto* lhs = ctx->simpleExpression()) {
        eq.kind = ast::EquationKind::Simple;
        eq.lhs = simple_expression(lhs).e;
        eq.rhs = expr(ctx->expression()).e;
        eq.span = join(r_.span(lhs), r_.span(ctx->expression()));
      } else if (auto* list = ctx->outputExpressionList()) {
        eq.kind = ast::EquationKind::Outputs;
        eq.span = join(r_.span(ctx->getStart()), r_.span(ctx->functionCallArgs()));
        eq.targets = output_list(list);
        eq.rhs = call_arguments(
                     component_reference(ctx->componentReference()), ctx->functionCallArgs(),
                     join(r_.span(ctx->componentReference()), r_.span(ctx->functionCallArgs())))
                     .e;
      } else if (auto* c = ctx->connectClause()) {
        eq.kind = ast::EquationKind::Connect;
        eq.span = r_.span(c);
        eq.lhs = component_reference(c->componentReference(0)).e;
        eq.rhs = component_reference(c->componentReference(1)).e;
      } else if (auto* f = ctx->forEquation()) {
        eq.kind = ast::EquationKind::For;
        eq.span = r_.span(f);
        for (auto* i : f->forIndices()->forIndex()) eq.indices.push_back(for_index(i));
        for (auto* e : f->equation()) equation(eq.body, e);
      } else if (auto* i = ctx->ifEquation()) {
        eq.kind = ast::EquationKind::If;
        eq.span = r_.span(i);
        if_equation(eq, i);
      } else if (auto* w = ctx->whenEquation()) {
        eq.kind = ast::EquationKind::When;
        eq.span = r_.span(w);
        when_equation(eq, w);
      } else if (auto* callee = ctx->componentReference()) {
        eq.kind = ast::EquationKind::Call;
        eq.span = join(r_.span(callee), r_.span(ctx->functionCallArgs()));
        eq.rhs = call_arguments(component_reference(callee), ctx->functionCallArgs(), eq.span).e;
      }
      out.push_back(std::move(eq));
    } catch (const StatementFailed&) {
    }
  }

  ast::ForIndex for_index(P::ForIndexContext* ctx) {
    ast::ForIndex index;
    index.name = ctx->IDENT()->getText();
    index.span = r_.span(ctx->IDENT()->getSymbol());
    // `for i loop` without `in`: the range is deduced by the flattener (Modelica 11.2.2.2)
    if (ctx->expression() != nullptr) index.range = expr(ctx->expression()).e;
    return index;
  }

  // IF c THEN eqs (ELSEIF c THEN eqs)* (ELSE eqs)? END IF: walk the children in order.
  void if_equation(ast::Equation& eq, P::IfEquationContext* ctx) {
    bool expect_condition = false;
    for (ParseTree* child : ctx->children) {
      size_t type = type_of(child);
      if (type == P::IF || type == P::ELSEIF) {
        expect_condition = true;
      } else if (type == P::ELSE) {
        eq.branches.emplace_back();
      } else if (type == P::THEN) {
        eq.branches.emplace_back();
      } else if (type == P::END) {
        break;
      } else if (auto* c = dynamic_cast<P::ExpressionContext*>(child); c && expect_condition) {
        eq.conditions.push_back(expr(c).e);
        expect_condition = false;
      } else if (auto* e = dynamic_cast<P::EquationContext*>(child)) {
        equation(eq.branches.back(), e);
      }
    }
  }

  // WHEN c THEN eqs (ELSEWHEN c THEN eqs)* END WHEN: one condition per branch.
  void when_equation(ast::Equation& eq, P::WhenEquationContext* ctx) {
    for (ParseTree* child : ctx->children) {
      const size_t type = type_of(child);
      if (type == P::THEN) {
        eq.branches.emplace_back();
      } else if (type == P::END) {
        break;
      } else if (auto* c = dynamic_cast<P::ExpressionContext*>(child)) {
        eq.conditions.push_back(expr(c).e);
      } else if (auto* e = dynamic_cast<P::EquationContext*>(child)) {
        equation(eq.branches.back(), e);
      }
    }
  }

  // ---------------------------------------------------------------- algorithms

  // `(a, , b)`: one place per comma, plus one; a place without a reference drops that output.
  std::vector<ast::ExprPtr> output_list(P::OutputExpressionListContext* list) {
    std::vector<ast::ExprPtr> targets;
    bool filled = false;
    for (ParseTree* child : list->children) {
      if (type_of(child) == P::COMMA) {
        if (!filled) targets.emplace_back();
        filled = false;
      } else if (auto* c = dynamic_cast<P::ComponentReferenceContext*>(child)) {
        targets.push_back(component_reference(c).e);
        filled = true;
      }
    }
    if (!filled) targets.emplace_back();
    return targets;
  }

  void statement(ast::StatementList& out, P::StatementContext* ctx) {
    try {
      ast::Statement st;
      st.span = r_.span(ctx);
      if (ctx->RETURN() != nullptr) {
        st.kind = ast::StatementKind::Return;
      } else if (ctx->BREAK() != nullptr) {
        st.kind = ast::StatementKind::Break;
      } else if (auto* i = ctx->ifStatement()) {
        st.kind = ast::StatementKind::If;
        bool expect_condition = false;
        for (ParseTree* child : i->children) {
          size_t type = type_of(child);
          if (type == P::IF || type == P::ELSEIF) {
            expect_condition = true;
          } else if (type == P::ELSE || type == P::THEN) {
            st.branches.emplace_back();
          } else if (type == P::END) {
            break;
          } else if (auto* c = dynamic_cast<P::ExpressionContext*>(child); c && expect_condition) {
            st.conditions.push_back(expr(c).e);
            expect_condition = false;
          } else if (auto* b = dynamic_cast<P::StatementContext*>(child)) {
            statement(st.branches.back(), b);
          }
        }
      } else if (auto* f = ctx->forStatement()) {
        st.kind = ast::StatementKind::For;
        for (auto* ix : f->forIndices()->forIndex()) st.indices.push_back(for_index(ix));
        for (auto* b : f->statement()) statement(st.body, b);
      } else if (auto* w = ctx->whileStatement()) {
        st.kind = ast::StatementKind::While;
        st.conditions.push_back(expr(w->expression()).e);
        for (auto* b : w->statement()) statement(st.body, b);
      } else if (ctx->outputExpressionList() == nullptr && ctx->functionCallArgs() != nullptr) {
        st.kind = ast::StatementKind::Call;
        Built call = component_reference(ctx->componentReference());
        call = call_arguments(
            std::move(call), ctx->functionCallArgs(),
            join(r_.span(ctx->componentReference()), r_.span(ctx->functionCallArgs())));
        st.value = std::move(call.e);
      } else if (auto* list = ctx->outputExpressionList()) {
        st.kind = ast::StatementKind::MultiAssign;
        st.targets = output_list(list);
        Built call = component_reference(ctx->componentReference());
        call = call_arguments(
            std::move(call), ctx->functionCallArgs(),
            join(r_.span(ctx->componentReference()), r_.span(ctx->functionCallArgs())));
        st.value = std::move(call.e);
      } else {
        st.kind = ast::StatementKind::Assign;
        st.target = component_reference(ctx->componentReference()).e;
        st.value = expr(ctx->expression()).e;
      }
      out.push_back(std::move(st));
    } catch (const StatementFailed&) {
    }
  }

  // ---------------------------------------------------------------- expressions

  Span join(Span first, const Span& last) const {
    first.end_line = last.end_line;
    first.end_col = last.end_col;
    return first;
  }

  // Checks the depth of a node that is about to be created; too deep ends the statement.
  int deeper(int child_depth, const Span& where) {
    int depth = child_depth + 1;
    if (depth > kMaxExprDepth) {
      r_.error(DiagKind::expression_too_deep, where, {std::to_string(kMaxExprDepth)});
      r_.diags().help(
          "a chain of n operators counts as n levels; split the expression into several "
          "equations with intermediate variables");
      throw StatementFailed{};
    }
    return depth;
  }

  Built node(ast::ExprKind kind, Span span, std::vector<Built> args, std::string op = {}) {
    int depth = 0;
    auto e = std::make_unique<ast::Expr>();
    e->kind = kind;
    e->span = span;
    e->op = std::move(op);
    for (auto& a : args) {
      depth = std::max(depth, a.depth);
      e->args.push_back(std::move(a.e));
    }
    return Built{std::move(e), deeper(depth, span)};
  }

  Built binary(Built lhs, std::string op, Built rhs) {
    Span span = join(lhs.e->span, rhs.e->span);
    std::vector<Built> args;
    args.push_back(std::move(lhs));
    args.push_back(std::move(rhs));
    return node(ast::ExprKind::Binary, span, std::move(args), std::move(op));
  }

  Built expr(P::ExpressionContext* ctx) {
    if (auto* s = ctx->simpleExpression()) return simple_expression(s);
    auto* i = ctx->ifExpression();
    std::vector<Built> args;
    for (auto* e : i->expression()) args.push_back(expr(e));
    return node(ast::ExprKind::If, r_.span(i), std::move(args));
  }

  Built simple_expression(P::SimpleExpressionContext* ctx) {
    auto parts = ctx->operatorExpression();
    if (parts.size() == 1) return operator_expression(parts[0]);
    std::vector<Built> args;
    for (auto* p : parts) args.push_back(operator_expression(p));
    return node(ast::ExprKind::Range, r_.span(ctx), std::move(args));
  }

  // ---------------------------------------------------------------- operator precedence

  // operatorExpression is a flat list `prefix* primary (binary prefix* primary)*`; the functions
  // below apply Modelica's precedence to it, one function per level (lowest first), so their
  // recursion depth is fixed. A token is a binary operator exactly when it follows an operand.
  struct Item {
    Token* op = nullptr;                   // an operator token, or
    P::PrimaryContext* operand = nullptr;  // an operand
    bool binary = false;
  };
  struct Cursor {
    std::vector<Item> items;
    size_t pos = 0;
    const Item* peek() const { return pos < items.size() ? &items[pos] : nullptr; }
    bool binary_in(std::span<const size_t> types) const {
      const Item* i = peek();
      if (i == nullptr || i->op == nullptr || !i->binary) return false;
      for (size_t t : types) {
        if (i->op->getType() == t) return true;
      }
      return false;
    }
    bool prefix_in(std::span<const size_t> types) const {
      const Item* i = peek();
      if (i == nullptr || i->op == nullptr || i->binary) return false;
      for (size_t t : types) {
        if (i->op->getType() == t) return true;
      }
      return false;
    }
    Token* take() { return items[pos++].op; }
  };

  static constexpr size_t kOr[] = {P::OR};
  static constexpr size_t kAnd[] = {P::AND};
  static constexpr size_t kNot[] = {P::NOT};
  static constexpr size_t kSigns[] = {P::PLUS, P::MINUS, P::DOT_PLUS, P::DOT_MINUS};
  static constexpr size_t kRelational[] = {P::LT, P::LE, P::GT, P::GE, P::EQ, P::NEQ};
  static constexpr size_t kMultiplicative[] = {P::STAR, P::SLASH, P::DOT_STAR, P::DOT_SLASH};
  static constexpr size_t kPower[] = {P::CARET, P::DOT_CARET};

  Built operator_expression(P::OperatorExpressionContext* ctx) {
    Cursor c;
    c.items.reserve(ctx->children.size());
    bool after_operand = false;
    for (ParseTree* child : ctx->children) {
      if (auto* p = dynamic_cast<P::PrimaryContext*>(child)) {
        c.items.push_back(Item{nullptr, p, false});
        after_operand = true;
      } else if (Token* t = token_of(child)) {
        c.items.push_back(Item{t, nullptr, after_operand});
        after_operand = false;
      }
    }
    Built e = parse_or(c);
    if (const Item* rest = c.peek()) {  // not reachable for input the grammar accepts
      r_.syntax(rest->op != nullptr ? r_.span(rest->op) : r_.span(rest->operand),
                "unexpected " + quote(rest->op != nullptr ? rest->op->getText() : "operand"));
      throw StatementFailed{};
    }
    return e;
  }

  Built parse_or(Cursor& c) {
    Built e = parse_and(c);
    while (c.binary_in(kOr)) {
      c.take();
      e = binary(std::move(e), "or", parse_and(c));
    }
    return e;
  }

  Built parse_and(Cursor& c) {
    Built e = parse_not(c);
    while (c.binary_in(kAnd)) {
      c.take();
      e = binary(std::move(e), "and", parse_not(c));
    }
    return e;
  }

  Built parse_not(Cursor& c) {
    if (!c.prefix_in(kNot)) return parse_relation(c);
    Token* op = c.take();
    Built operand = parse_relation(c);
    Span span = join(r_.span(op), operand.e->span);
    std::vector<Built> args;
    args.push_back(std::move(operand));
    return node(ast::ExprKind::Unary, span, std::move(args), "not");
  }

  Built parse_relation(Cursor& c) {
    Built e = parse_additive(c);
    if (!c.binary_in(kRelational)) return e;
    std::string op = c.take()->getText();
    e = binary(std::move(e), op, parse_additive(c));
    if (c.binary_in(kRelational)) {
      Token* second = c.peek()->op;
      r_.syntax(r_.span(second), "comparisons cannot be chained; write (a " + op + " b) and (b " +
                                     second->getText() + " c)");
      throw StatementFailed{};
    }
    return e;
  }

  // A leading sign applies to the first term: -a*b is -(a*b), -a^2 is -(a^2).
  Built parse_additive(Cursor& c) {
    Built e;
    if (c.prefix_in(kSigns)) {
      Token* sign = c.take();
      Built term = parse_multiplicative(c);
      Span span = join(r_.span(sign), term.e->span);
      std::vector<Built> args;
      args.push_back(std::move(term));
      // `.-a` is `-a`: elementwise and scalar negation are the same operation.
      std::string op = sign->getText();
      e = node(ast::ExprKind::Unary, span, std::move(args),
               op == ".-"   ? "-"
               : op == ".+" ? "+"
                            : op);
    } else {
      e = parse_multiplicative(c);
    }
    while (c.binary_in(kSigns)) {
      std::string op = c.take()->getText();
      e = binary(std::move(e), op, parse_multiplicative(c));
    }
    return e;
  }

  Built parse_multiplicative(Cursor& c) {
    Built e = parse_power(c);
    while (c.binary_in(kMultiplicative)) {
      std::string op = c.take()->getText();
      e = binary(std::move(e), op, parse_power(c));
    }
    return e;
  }

  // Modelica's power operator is not associative: a^b^c must be bracketed.
  Built parse_power(Cursor& c) {
    Built e = operand(c);
    if (!c.binary_in(kPower)) return e;
    std::string op = c.take()->getText();
    e = binary(std::move(e), op, operand(c));
    if (c.binary_in(kPower)) {
      std::string second = c.peek()->op->getText();
      r_.syntax(r_.span(c.peek()->op), "'" + second + "' is not associative; write (a" + op + "b)" +
                                           second + "c or a" + op + "(b" + second + "c)");
      throw StatementFailed{};
    }
    return e;
  }

  // An operand; a prefix operator here is one Modelica does not allow in this place.
  Built operand(Cursor& c) {
    const Item* i = c.peek();
    if (i != nullptr && i->operand != nullptr) {
      ++c.pos;
      return primary(i->operand);
    }
    if (i != nullptr && i->op != nullptr) {
      Token* t = i->op;
      r_.syntax(r_.span(t), "unexpected " + quote(t->getText()));
      if (t->getType() == P::NOT) {
        r_.diags().help(
            "'not' applies to a whole comparison: write the operand in parentheses, "
            "as in a and (not b)");
      } else {
        r_.diags().help(
            "a sign may only start an expression: write the signed operand in parentheses, as "
            "in 2*(-x)");
      }
      throw StatementFailed{};
    }
    throw StatementFailed{};  // not reachable: the grammar ends the list with an operand
  }

  Built primary(P::PrimaryContext* ctx) {
    Token* first = ctx->getStart();
    Span span = r_.span(ctx);
    switch (first->getType()) {
      case P::UNSIGNED_NUMBER:
        return number(first);
      case P::STRING: {
        auto e = leaf(ast::ExprKind::String, span);
        e.e->text = unescape(first);
        return e;
      }
      case P::TRUE:
      case P::FALSE: {
        auto e = leaf(ast::ExprKind::Bool, span);
        e.e->boolean = first->getType() == P::TRUE;
        return e;
      }
      case P::SUBSCRIPT_END:
        if (subscript_depth_ == 0) {
          r_.syntax(span, "'end' can only be used inside array subscripts");
        }
        return leaf(ast::ExprKind::End, span);
      case P::LPAREN:
        return expr(ctx->expression());
      case P::INITIAL: {  // the event operator initial(): a call without arguments
        auto e = leaf(ast::ExprKind::Call, span);
        e.e->ref.push_back(ast::RefPart{"initial", {}, r_.span(first)});
        return e;
      }
      case P::LBRACKET: {
        auto e = std::make_unique<ast::Expr>();
        e->kind = ast::ExprKind::Matrix;
        e->span = span;
        int depth = 0;
        for (auto* row : ctx->expressionList()) {
          std::vector<ast::ExprPtr> cells;
          for (auto* cell : row->expression()) {
            Built b = expr(cell);
            depth = std::max(depth, b.depth);
            cells.push_back(std::move(b.e));
          }
          e->rows.push_back(std::move(cells));
        }
        return Built{std::move(e), deeper(depth, span)};
      }
      case P::LBRACE: {
        std::vector<Built> elements;
        if (auto* a = ctx->arrayArguments()) {
          if (a->FOR() != nullptr)
            return iterated(ast::ExprKind::Comprehension, span, expr(a->expression(0)),
                            a->forIndices(), a->iteratorFilter());
          for (auto* x : a->expression()) elements.push_back(expr(x));
        }
        return node(ast::ExprKind::Array, span, std::move(elements));
      }
      default:
        break;
    }
    Built ref = component_reference(ctx->componentReference());
    auto* call = ctx->functionCallArgs();
    if (call == nullptr) return ref;
    return call_arguments(std::move(ref), call, span);
  }

  // `name(args)`: the reference becomes a Call (or a Reduction) over the arguments.
  Built call_arguments(Built ref, P::FunctionCallArgsContext* call, Span span) {
    ref.e->kind = ast::ExprKind::Call;
    ref.e->span = span;
    for (const auto& part : ref.e->ref) {
      if (!part.subscripts.empty()) {
        r_.syntax(part.span, "a function name cannot have subscripts");
        throw StatementFailed{};
      }
    }
    int depth = ref.depth;
    if (auto* args = call->functionArguments()) {
      if (args->FOR() != nullptr) {
        auto* a = args->functionArgument(0);
        if (a->IDENT() != nullptr) {
          r_.error(DiagKind::unsupported, r_.span(a),
                   {"the named argument '" + a->IDENT()->getText() + " = ...'"});
          throw StatementFailed{};
        }
        Built body = iterated(ast::ExprKind::Reduction, span, expr(a->expression()),
                              args->forIndices(), args->iteratorFilter());
        body.e->ref = std::move(ref.e->ref);
        body.depth = deeper(std::max(body.depth, ref.depth), span);
        return body;
      }
      bool named = false;
      for (auto* a : args->functionArgument()) named = named || a->IDENT() != nullptr;
      for (auto* a : args->functionArgument()) {
        if (named) {
          ref.e->arg_names.push_back(a->IDENT() != nullptr ? a->IDENT()->getText() : "");
          ref.e->arg_spans.push_back(r_.span(a));
        }
        Built b = expr(a->expression());
        depth = std::max(depth, b.depth);
        ref.e->args.push_back(std::move(b.e));
      }
    }
    ref.depth = deeper(depth, span);
    return ref;
  }

  // `{body for i in a, j in b}` or `f(body for i in a)`: the body and the iterators as written.
  Built iterated(ast::ExprKind kind, Span span, Built body, P::ForIndicesContext* indices,
                 P::IteratorFilterContext* filter) {
    std::vector<Built> args;
    args.push_back(std::move(body));
    Built b = node(kind, span, std::move(args));
    for (auto* i : indices->forIndex()) b.e->iterators.push_back(for_index(i));
    if (filter != nullptr) {
      Built f = expr(filter->expression());
      b.depth = deeper(std::max(b.depth, f.depth), span);
      b.e->filter = std::move(f.e);
    }
    return b;
  }

  // IDENT subscripts? ('.' IDENT subscripts?)*
  Built component_reference(P::ComponentReferenceContext* ctx) {
    auto e = std::make_unique<ast::Expr>();
    e->kind = ast::ExprKind::Ref;
    e->span = r_.span(ctx);
    int depth = 0;
    // a global name `.A.b` (Modelica 3.6, 5.3.3): the first part keeps the leading '.'
    const bool global = !ctx->children.empty() && type_of(ctx->children[0]) == P::DOT;
    for (ParseTree* child : ctx->children) {
      if (type_of(child) == P::IDENT) {
        Token* t = token_of(child);
        e->ref.push_back(
            ast::RefPart{(global && e->ref.empty() ? "." : "") + t->getText(), {}, r_.span(t)});
      } else if (auto* s = dynamic_cast<P::ArraySubscriptsContext*>(child)) {
        ast::RefPart& part = e->ref.back();
        for (auto* sub : s->subscript()) {
          Built b = subscript(sub);
          depth = std::max(depth, b.depth);
          part.subscripts.push_back(std::move(b.e));
        }
        Span end = r_.span(s);
        part.span.end_line = end.end_line;
        part.span.end_col = end.end_col;
      }
    }
    Span span = e->span;
    return Built{std::move(e), deeper(depth, span)};
  }

  std::vector<ast::ExprPtr> subscripts(P::ArraySubscriptsContext* ctx) {
    std::vector<ast::ExprPtr> out;
    for (auto* s : ctx->subscript()) out.push_back(subscript(s).e);
    return out;
  }

  Built subscript(P::SubscriptContext* ctx) {
    if (ctx->expression() == nullptr) return leaf(ast::ExprKind::Colon, r_.span(ctx));
    ++subscript_depth_;
    struct Restore {
      int& depth;
      ~Restore() { --depth; }
    } restore{subscript_depth_};
    return expr(ctx->expression());
  }

  static Built leaf(ast::ExprKind kind, Span span) {
    auto e = std::make_unique<ast::Expr>();
    e->kind = kind;
    e->span = span;
    return Built{std::move(e), 1};
  }

  Built number(Token* t) {
    std::string text = t->getText();
    Built b = leaf(ast::ExprKind::Number, r_.span(t));
    b.e->is_integer = text.find_first_of(".eE") == std::string::npos;
    double value = 0.0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc::result_out_of_range) {
      // Underflow rounds to zero, as in every Modelica tool; overflow is an error.
      bool tiny = text.find("e-") != std::string::npos || text.find("E-") != std::string::npos;
      if (!tiny) r_.error(DiagKind::number_out_of_range, r_.span(t), {quote(text)});
      value = 0.0;
    } else if (ec != std::errc() || end != text.data() + text.size()) {
      r_.syntax(r_.span(t), "malformed number " + quote(text));
    }
    b.e->number = value;
    return b;
  }

  // The text between the quotes with Modelica's escapes decoded.
  std::string unescape(Token* t) {
    std::string raw = t->getText();
    std::string out;
    for (size_t i = 1; i + 1 < raw.size(); ++i) {
      if (raw[i] != '\\') {
        out += raw[i];
        continue;
      }
      char c = raw[++i];
      switch (c) {
        case '\'':
        case '"':
        case '?':
        case '\\':
          out += c;
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'v':
          out += '\v';
          break;
        default: {
          size_t len = utf8_sequence_length(raw, i);
          r_.syntax(r_.span(t), "unknown escape sequence " +
                                    quote("\\" + raw.substr(i, len == 0 ? 1 : len)) + " in string");
          out += c;
          break;
        }
      }
    }
    return out;
  }

  std::string string_comment(P::StringCommentContext* ctx) {
    std::string out;
    if (ctx == nullptr) return out;
    for (auto* s : ctx->STRING()) out += unescape(s->getSymbol());
    return out;
  }

  // A type name as written; a global name `.A.B` keeps its leading '.' (Flattener::lookup_class).
  static std::string type_name(P::TypeSpecifierContext* ctx) {
    return (ctx->DOT() != nullptr ? "." : "") + dotted(ctx->name());
  }

  static std::string dotted(P::NameContext* ctx) {
    std::string out;
    for (auto* id : ctx->IDENT()) {
      if (!out.empty()) out += '.';
      out += id->getText();
    }
    return out;
  }

  Reporter& r_;
  int subscript_depth_ = 0;
};

// ---------------------------------------------------------------- driver

// Runs `fn` on a thread with a kParserStackBytes stack; inline if no such thread can be made.
template <class Fn>
void run_with_large_stack(Fn& fn) {
  pthread_attr_t attr;
  bool started = false;
  pthread_t thread;
  if (pthread_attr_init(&attr) == 0) {
    if (pthread_attr_setstacksize(&attr, kParserStackBytes) == 0) {
      auto trampoline = [](void* arg) -> void* {
        (*static_cast<Fn*>(arg))();
        return nullptr;
      };
      started = pthread_create(&thread, &attr, trampoline, &fn) == 0;
    }
    pthread_attr_destroy(&attr);
  }
  if (started) {
    pthread_join(thread, nullptr);
  } else {
    fn();
  }
}

// Where the first malformed UTF-8 sequence starts, as a line:col span; nullopt if the text is
// well formed.
std::optional<Span> find_invalid_utf8(std::string_view text, uint32_t file) {
  uint32_t line = 1, col = 1;
  for (size_t i = 0; i < text.size();) {
    size_t len = utf8_sequence_length(text, i);
    if (len == 0) return Span{file, line, col, line, col};
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
    i += len;
  }
  return std::nullopt;
}

std::string describe_character(const std::string& text) {
  auto c = static_cast<unsigned char>(text.empty() ? 0 : text[0]);
  if (c >= 0x21 && c < 0x7F) return quote(text);
  // Invisible or non-ASCII: name the code point, and show it if it is printable.
  char32_t cp = 0;
  size_t len = utf8_sequence_length(text, 0);
  if (len == 1) {
    cp = c;
  } else if (len > 1) {
    cp = c & (0xFF >> (len + 1));
    for (size_t i = 1; i < len; ++i) cp = (cp << 6) | (static_cast<unsigned char>(text[i]) & 0x3F);
  }
  std::string name = fmt::format("U+{:04X}", static_cast<uint32_t>(cp));
  if (cp >= 0xA0) return quote(text) + " (" + name + ")";
  return name;
}

class FileParser {
 public:
  FileParser(const SourceManager& sources, uint32_t file_id, DiagnosticEngine& diags)
      : sources_(sources), r_(file_id, diags) {}

  // Never throw.
  std::unique_ptr<ast::File> run_file() {
    return guarded([&] {
      return parse(&P::storedDefinition, [&](Builder& builder, P::StoredDefinitionContext* tree) {
        auto file = builder.file(tree);
        if (!r_.failed() && file->classes.empty())
          r_.error(DiagKind::empty_file, Span{r_.file(), 1, 1, 1, 1});
        return file;
      });
    });
  }
  ast::ExprPtr run_expression() {
    return guarded([&] {
      return parse(&P::loneExpression, [&](Builder& builder, P::LoneExpressionContext* tree) {
        return builder.lone_expression(tree);
      });
    });
  }

 private:
  template <class Fn>
  auto guarded(Fn fn) -> decltype(fn()) {
    try {
      return fn();
    } catch (const ParseAbort&) {
    } catch (const StatementFailed&) {
    } catch (const std::bad_alloc&) {
      internal_error("out of memory while parsing");
    } catch (const std::exception& e) {
      internal_error(std::string("internal error in the parser: ") + e.what());
    } catch (...) {
      internal_error("internal error in the parser");
    }
    return nullptr;
  }

  void internal_error(const std::string& message) {
    try {
      r_.syntax(Span{r_.file(), 0, 0, 0, 0}, message);  // the whole file
    } catch (...) {
    }
  }

  // Lexes and parses the text from the entry rule `rule`, then converts the tree with
  // `build(builder, tree)` while the parser that owns the tree is alive. nullptr when errors
  // were reported.
  template <class Ctx, class Build>
  auto parse(Ctx* (P::*rule)(), Build build)
      -> decltype(build(std::declval<Builder&>(), static_cast<Ctx*>(nullptr))) {
    const std::string& text = sources_.text(r_.file());
    if (auto bad = find_invalid_utf8(text, r_.file())) {
      r_.error(DiagKind::invalid_utf8, *bad);
      return nullptr;
    }
    // The BOM is not part of line 1's columns (the renderer drops it too).
    std::string_view body = text;
    if (body.substr(0, 3) == "\xEF\xBB\xBF") body.remove_prefix(3);

    antlr4::ANTLRInputStream input(body.data(), body.size());
    grammar::MbsLexer lexer(&input);
    lexer.removeErrorListeners();
    std::vector<std::unique_ptr<Token>> tokens;
    // After a lexical error the syntax errors would mostly be its consequences: stop.
    if (!lex(lexer, tokens) || r_.failed()) return nullptr;
    if (tokens.empty()) {
      if constexpr (std::is_same_v<Ctx, P::StoredDefinitionContext>)
        r_.error(DiagKind::empty_file, Span{r_.file(), 1, 1, 1, 1});
      else
        r_.syntax(Span{r_.file(), 0, 0, 0, 0}, "expected an expression, found nothing");
      return nullptr;
    }
    if constexpr (std::is_same_v<Ctx, P::LoneExpressionContext>) {
      // `final` is a keyword of modifications, which a lone expression cannot contain; there it
      // is a name (the reduction final(x) of an objective).
      for (auto& t : tokens)
        if (t->getType() == P::FINAL)
          if (auto* w = dynamic_cast<antlr4::WritableToken*>(t.get())) w->setType(P::IDENT);
    }

    antlr4::ListTokenSource source(std::move(tokens));
    antlr4::CommonTokenStream stream(&source);
    stream.fill();

    // SLL prediction is much faster and almost always right; a failure may be SLL's weakness
    // rather than a real error, so it is retried with full LL and error reporting.
    FallbackListener listener(r_);  // outlives the parsers that refer to it
    auto parser = std::make_unique<GuardedParser>(&stream, r_);
    parser->removeErrorListeners();
    parser->setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
    parser->getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
        antlr4::atn::PredictionMode::SLL);
    Ctx* tree = nullptr;
    try {
      tree = ((*parser).*rule)();
    } catch (const antlr4::ParseCancellationException&) {
      tree = nullptr;
    }
    if (tree == nullptr) {
      stream.seek(0);
      parser = std::make_unique<GuardedParser>(&stream, r_);
      parser->removeErrorListeners();
      parser->addErrorListener(&listener);
      parser->setErrorHandler(std::make_shared<MbsErrorStrategy>(r_));
      parser->getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
          antlr4::atn::PredictionMode::LL);
      tree = ((*parser).*rule)();
    }
    if (r_.failed() || tree == nullptr) return nullptr;

    Builder builder(r_);
    auto result = build(builder, tree);
    if (r_.failed()) return nullptr;
    return result;
  }

  // Lexes the whole file, reporting the tokens the lexer makes for bad input (and dropping
  // them), and rejects input the parser must not see: bracket nesting deeper than kMaxNesting,
  // more than kMaxOperatorsPerLevel operators without brackets. Retypes `end` used as an
  // expression inside `[...]` as SUBSCRIPT_END (see the grammar). Returns false if parsing must
  // not start. Stops early when the error limit is reached (Reporter throws ParseAbort).
  bool lex(grammar::MbsLexer& lexer, std::vector<std::unique_ptr<Token>>& kept) {
    struct Level {
      size_t bracket;              // token type of the opening bracket (0 at the top)
      size_t operators = 0;        // binary operators since the last statement-level token
      Token* chain = nullptr;      // first operand of that operator chain
      bool after_operand = false;  // the previous token ends an operand
    };
    std::vector<Level> levels{Level{0}};
    size_t open_square = 0;
    size_t pending_end = static_cast<size_t>(-1);  // index in `kept` of an `end` inside [...]

    while (true) {
      std::unique_ptr<Token> owned = lexer.nextToken();
      Token* t = owned.get();
      const size_t type = t->getType();
      if (pending_end != static_cast<size_t>(-1) && type != P::ERROR_CHAR &&
          type != P::UNTERMINATED_STRING && type != P::UNTERMINATED_COMMENT) {
        // `end` followed by a name, `for`, `if`, `while`, `when` or `;` closes a block even inside
        // an unclosed
        // `[`; anything else makes it the expression `end`.
        if (type != P::IDENT && type != P::FOR && type != P::IF && type != P::WHILE &&
            type != P::WHEN && type != P::SEMICOLON && type != Token::EOF) {
          if (auto* w = dynamic_cast<antlr4::WritableToken*>(kept[pending_end].get())) {
            w->setType(P::SUBSCRIPT_END);
          }
        }
        pending_end = static_cast<size_t>(-1);
      }
      if (type == Token::EOF) return true;

      Level& level = levels.back();
      bool operand = false;
      switch (type) {
        case P::ERROR_CHAR:
          r_.error(DiagKind::invalid_character, r_.span(t), {describe_character(t->getText())});
          continue;
        case P::UNTERMINATED_STRING: {
          Span s = r_.span(t);
          s.end_line = s.line;
          s.end_col = s.col;
          r_.error(DiagKind::unterminated_string, s);
          continue;
        }
        case P::UNTERMINATED_COMMENT: {
          Span s = r_.span(t);
          s.end_col = s.col + 1;
          r_.error(DiagKind::unterminated_comment, s);
          continue;
        }
        case P::LPAREN:
        case P::LBRACKET:
        case P::LBRACE:
          if (levels.size() > static_cast<size_t>(kMaxNesting)) {
            r_.error(DiagKind::nesting_too_deep, r_.span(t), {std::to_string(kMaxNesting)});
            return false;
          }
          if (level.chain == nullptr) level.chain = t;
          level.after_operand = false;
          if (type == P::LBRACKET) ++open_square;
          levels.push_back(Level{type});  // invalidates `level`
          kept.push_back(std::move(owned));
          continue;
        case P::RPAREN:
        case P::RBRACKET:
        case P::RBRACE:
          if (levels.size() > 1) {
            if (levels.back().bracket == P::LBRACKET) --open_square;
            levels.pop_back();
          }
          levels.back().after_operand = true;
          kept.push_back(std::move(owned));
          continue;
        case P::END:
          if (open_square > 0) pending_end = kept.size();
          level.operators = 0;
          level.chain = nullptr;
          break;
        case P::IDENT:
        case P::UNSIGNED_NUMBER:
        case P::STRING:
        case P::TRUE:
        case P::FALSE:
          operand = true;
          if (level.chain == nullptr) level.chain = t;
          break;
        case P::DOT:
          break;
        case P::OR:
        case P::AND:
        case P::NOT:
        case P::PLUS:
        case P::MINUS:
        case P::STAR:
        case P::SLASH:
        case P::CARET:
        case P::DOT_PLUS:
        case P::DOT_MINUS:
        case P::DOT_STAR:
        case P::DOT_SLASH:
        case P::DOT_CARET:
        case P::EQ:
        case P::NEQ:
        case P::LT:
        case P::LE:
        case P::GT:
        case P::GE:
          if (level.after_operand && ++level.operators > kMaxOperatorsPerLevel) {
            r_.error(DiagKind::expression_too_long,
                     r_.span(level.chain != nullptr ? level.chain : t),
                     {std::to_string(kMaxOperatorsPerLevel)});
            r_.diags().help(
                "split the expression into several equations with intermediate "
                "variables");
            return false;
          }
          break;
        default:  // keywords, ';', ',', '=', ':': the end of any operator chain
          level.operators = 0;
          level.chain = nullptr;
          break;
      }
      level.after_operand = operand;
      kept.push_back(std::move(owned));
    }
  }

  const SourceManager& sources_;
  Reporter r_;
};

}  // namespace

namespace {

// Runs `fn(parser)` with one FileParser, serialised and on a thread with a large stack.
template <class Fn>
auto with_parser(const SourceManager& sources, uint32_t file_id, DiagnosticEngine& diags, Fn fn)
    -> decltype(fn(std::declval<FileParser&>())) {
  // ANTLR 4.9's prediction cache (a static DFA shared by all parser instances) is not
  // thread-safe, so parses are serialised.
  static std::mutex one_parse_at_a_time;
  std::lock_guard<std::mutex> lock(one_parse_at_a_time);
  decltype(fn(std::declval<FileParser&>())) result;
  auto work = [&]() noexcept {
    try {
      FileParser parser(sources, file_id, diags);
      result = fn(parser);
    } catch (...) {
      result = nullptr;
    }
  };
  run_with_large_stack(work);
  return result;
}

}  // namespace

std::unique_ptr<ast::File> parse_file(const SourceManager& sources, uint32_t file_id,
                                      DiagnosticEngine& diags) {
  return with_parser(sources, file_id, diags, [](FileParser& p) { return p.run_file(); });
}

ast::ExprPtr parse_expression(const SourceManager& sources, uint32_t file_id,
                              DiagnosticEngine& diags) {
  return with_parser(sources, file_id, diags, [](FileParser& p) { return p.run_expression(); });
}

}  // namespace mbs
