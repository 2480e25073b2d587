// The parser: the AST of the pendulum model, every construct of the language, operator
// precedence, the exact text of syntax errors, and robustness against hostile input (deep
// nesting, junk, invalid UTF-8, huge lines, random mutations).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/syntax/Parser.h"

namespace mbs {
namespace {

struct Parsed {
  SourceManager sources;
  DiagnosticEngine diags{sources};
  uint32_t id = 0;
  std::unique_ptr<ast::File> file;
  std::string errors() const { return diags.render(); }
};

std::unique_ptr<Parsed> parse(std::string text, std::string path = "t.mbs") {
  auto p = std::make_unique<Parsed>();
  p->id = p->sources.add_file(std::move(path), std::move(text));
  p->file = parse_file(p->sources, p->id, p->diags);
  return p;
}

std::string ast_text(const ast::File& f) {
  std::ostringstream os;
  print_ast(os, f);
  return os.str();
}

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

const char* kPendulum = R"(model Pendulum "point mass on a massless rod, Cartesian coordinates"
  parameter Real m = 1 "mass [kg]";
  parameter Real L = 1 "rod length [m]";
  parameter Real g = 9.81;
  Real x(start = 1), y(start = 0);
  Real lambda "constraint multiplier";
equation
  m*der(der(x)) = -2*x*lambda;
  m*der(der(y)) = -m*g - 2*y*lambda;
  x^2 + y^2 = L^2;
end Pendulum;
)";

// ---------------------------------------------------------------- the pendulum

TEST(Pendulum, ComponentsAndEquations) {
  auto p = parse(kPendulum);
  ASSERT_NE(p->file, nullptr) << p->errors();
  EXPECT_EQ(p->errors(), "");
  ASSERT_EQ(p->file->classes.size(), 1u);
  const ast::ClassDef& c = *p->file->classes[0];
  EXPECT_EQ(c.kind, ast::ClassKind::Model);
  EXPECT_EQ(c.name, "Pendulum");
  EXPECT_EQ(c.description, "point mass on a massless rod, Cartesian coordinates");
  EXPECT_EQ(c.span.line, 1u);
  EXPECT_EQ(c.span.col, 7u);
  EXPECT_EQ(c.span.end_col, 14u);

  ASSERT_EQ(c.components.size(), 6u);
  std::vector<std::string> names;
  for (const auto& comp : c.components) {
    names.push_back(comp.name);
    EXPECT_EQ(comp.type_name, "Real");
    EXPECT_EQ(comp.causality, ast::Causality::None);
    EXPECT_FALSE(comp.flow);
    EXPECT_FALSE(comp.is_protected);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"m", "L", "g", "x", "y", "lambda"}));

  const ast::Component& m = c.components[0];
  EXPECT_EQ(m.variability, ast::Variability::Parameter);
  ASSERT_NE(m.mod, nullptr);
  EXPECT_TRUE(m.mod->args.empty());
  ASSERT_NE(m.mod->value, nullptr);
  EXPECT_EQ(m.mod->value->kind, ast::ExprKind::Number);
  EXPECT_TRUE(m.mod->value->is_integer);
  EXPECT_EQ(m.mod->value->number, 1.0);
  EXPECT_EQ(m.description, "mass [kg]");
  EXPECT_EQ(m.span.line, 2u);
  EXPECT_EQ(m.span.col, 18u);
  EXPECT_EQ(m.type_span.col, 13u);
  EXPECT_EQ(m.type_span.end_col, 16u);

  const ast::Component& g = c.components[2];
  EXPECT_FALSE(g.mod->value->is_integer);
  EXPECT_EQ(g.mod->value->number, 9.81);
  EXPECT_EQ(g.description, "");

  const ast::Component& x = c.components[3];
  EXPECT_EQ(x.variability, ast::Variability::Continuous);
  ASSERT_NE(x.mod, nullptr);
  EXPECT_EQ(x.mod->value, nullptr);
  ASSERT_EQ(x.mod->args.size(), 1u);
  EXPECT_EQ(x.mod->args[0].path, std::vector<std::string>{"start"});
  ASSERT_NE(x.mod->args[0].mod, nullptr);
  EXPECT_EQ(expr_to_string(*x.mod->args[0].mod->value), "1");
  EXPECT_EQ(x.mod->args[0].span.col, 10u);
  EXPECT_EQ(x.span.line, 5u);
  EXPECT_EQ(x.span.col, 8u);

  const ast::Component& y = c.components[4];
  EXPECT_EQ(expr_to_string(*y.mod->args[0].mod->value), "0");
  EXPECT_EQ(y.span.col, 22u);
  EXPECT_EQ(y.type_span.col, 3u);  // shared with x
  EXPECT_EQ(c.components[5].description, "constraint multiplier");

  ASSERT_EQ(c.equations.size(), 3u);
  std::vector<std::string> eqs;
  for (const auto& eq : c.equations) {
    EXPECT_EQ(eq.kind, ast::EquationKind::Simple);
    eqs.push_back(expr_to_string(*eq.lhs) + " = " + expr_to_string(*eq.rhs));
  }
  EXPECT_EQ(eqs, (std::vector<std::string>{
                     "(m * der(der(x))) = (-((2 * x) * lambda))",
                     "(m * der(der(y))) = ((-(m * g)) - ((2 * y) * lambda))",
                     "((x ^ 2) + (y ^ 2)) = (L ^ 2)",
                 }));
  const ast::Equation& first = c.equations[0];
  EXPECT_EQ(first.span.line, 8u);
  EXPECT_EQ(first.span.col, 3u);
  EXPECT_EQ(first.span.end_line, 8u);
  EXPECT_EQ(first.span.end_col, 29u);
  // der(der(x)): a call whose argument is a call.
  const ast::Expr& der = *first.lhs->args[1];
  EXPECT_EQ(der.kind, ast::ExprKind::Call);
  EXPECT_EQ(der.ref.size(), 1u);
  EXPECT_EQ(der.ref[0].name, "der");
  EXPECT_EQ(der.span.col, 5u);
  EXPECT_EQ(der.span.end_col, 15u);
  EXPECT_EQ(der.args[0]->kind, ast::ExprKind::Call);
  // -2*x*lambda: the sign applies to the whole term.
  EXPECT_EQ(first.rhs->kind, ast::ExprKind::Unary);
  EXPECT_EQ(first.rhs->op, "-");
  EXPECT_EQ(first.rhs->span.col, 19u);
}

TEST(Pendulum, PrintedAst) {
  auto p = parse(kPendulum);
  ASSERT_NE(p->file, nullptr) << p->errors();
  EXPECT_EQ(ast_text(*p->file),
            R"(model Pendulum @1:7 "point mass on a massless rod, Cartesian coordinates"
  component parameter Real m @2:18 = 1 "mass [kg]"
  component parameter Real L @3:18 = 1 "rod length [m]"
  component parameter Real g @4:18 = 9.81
  component Real x @5:8 (start = 1)
  component Real y @5:22 (start = 0)
  component Real lambda @6:8 "constraint multiplier"
  equation @8:3 (m * der(der(x))) = (-((2 * x) * lambda))
  equation @9:3 (m * der(der(y))) = ((-(m * g)) - ((2 * y) * lambda))
  equation @10:3 ((x ^ 2) + (y ^ 2)) = (L ^ 2)
)");
}

// ---------------------------------------------------------------- expressions

// The right-hand side of `x = <text>;` printed back.
std::string rhs(const std::string& text, std::string* errors = nullptr) {
  auto p = parse("model M\nequation\n  x = " + text + ";\nend M;\n");
  if (errors != nullptr) *errors = p->errors();
  if (p->file == nullptr) return "<error> " + p->errors();
  return expr_to_string(*p->file->classes.at(0)->equations.at(0).rhs);
}

struct Case {
  const char* input;
  const char* expected;
};

TEST(Expressions, EveryConstruct) {
  const Case cases[] = {
      {"1", "1"},
      {"1.5", "1.5"},
      {"1e-3", "0.001"},
      {"2.5E+4", "25000.0"},
      {".5", "0.5"},
      {"2.", "2.0"},
      {"1e3", "1000.0"},
      {"true", "true"},
      {"false", "false"},
      {"\"text\"", "\"text\""},
      {"\"q\\\"b\\\\s\\n\"", "\"q\\\"b\\\\s\\n\""},
      {"a", "a"},
      {"time", "time"},
      {"a.b[i, j].c", "a.b[i, j].c"},
      {"a[1].b[2, 3]", "a[1].b[2, 3]"},
      {"der(x)", "der(x)"},
      {"sin(x)", "sin(x)"},
      {"Modelica.Math.sin(x)", "Modelica.Math.sin(x)"},
      {"size(a, 1)", "size(a, 1)"},
      {"f()", "f()"},
      {"(a)", "a"},
      {"((a))", "a"},
      {"{1, 2, 3}", "{1, 2, 3}"},
      {"{{1, 2}, {3, 4}}", "{{1, 2}, {3, 4}}"},
      {"{}", "{}"},
      {"[1, 2; 3, 4]", "[1, 2; 3, 4]"},
      {"[1, 2]", "[1, 2]"},
      {"[1; 2]", "[1; 2]"},
      {"a[end]", "a[end]"},
      {"a[end - 1]", "a[(end - 1)]"},
      {"a[2:end]", "a[(2:end)]"},
      {"a[:, 1]", "a[:, 1]"},
      {"a[:]", "a[:]"},
      {"1:n", "(1:n)"},
      {"1:2:n", "(1:2:n)"},
      {"if c then a else b", "(if c then a else b)"},
      {"if c then a elseif c2 then b else d", "(if c then a elseif c2 then b else d)"},
      {"if c then a elseif c2 then b elseif c3 then e else d",
       "(if c then a elseif c2 then b elseif c3 then e else d)"},
      {"if a then if b then 1 else 2 else 3", "(if a then (if b then 1 else 2) else 3)"},
      {"(if a then b else c) + 1", "((if a then b else c) + 1)"},
      {"a == b", "(a == b)"},
      {"a <> b", "(a <> b)"},
      {"a < b", "(a < b)"},
      {"a <= b", "(a <= b)"},
      {"a > b", "(a > b)"},
      {"a >= b", "(a >= b)"},
      // array constructors with iterators and reductions (the printer brackets ranges)
      {"{i for i in 1:3}", "{i for i in (1:3)}"},
      {"{i^2 for i in {1, 3, 7}}", "{(i ^ 2) for i in {1, 3, 7}}"},
      {"{a[i, j] for i in 1:n, j in 1:2:m}", "{a[i, j] for i in (1:n), j in (1:2:m)}"},
      {"{{i*j for j in 1:3} for i in 1:2}", "{{(i * j) for j in (1:3)} for i in (1:2)}"},
      {"{if i > 1 then x[i] else 0 for i in 1:n}",
       "{(if (i > 1) then x[i] else 0) for i in (1:n)}"},
      {"sum(x[i]^2 for i in 1:n)", "sum((x[i] ^ 2) for i in (1:n))"},
      {"product(i for i in 1:4) + min(x[i] for i in 2:3)",
       "(product(i for i in (1:4)) + min(x[i] for i in (2:3)))"},
      {"max(k[i]*x[j] for i in 1:2, j in 1:3)", "max((k[i] * x[j]) for i in (1:2), j in (1:3))"},
      // the iterator filter (an mbs extension)
      {"{i for i in 1:n if i > 2}", "{i for i in (1:n) if (i > 2)}"},
      {"sum(x[i] for i in 1:n, j in {1, 2} if i <> j)",
       "sum(x[i] for i in (1:n), j in {1, 2} if (i <> j))"},
      {"{if c then 1 else 2 for i in if c then 1:2 else 1:3 if i > 1}",
       "{(if c then 1 else 2) for i in (if c then (1:2) else (1:3)) if (i > 1)}"},
  };
  for (const Case& c : cases) EXPECT_EQ(rhs(c.input), c.expected) << "input: " << c.input;
}

TEST(Expressions, Precedence) {
  const Case cases[] = {
      {"-a^2", "(-(a ^ 2))"},
      {"-a*b", "(-(a * b))"},
      {"-a + b", "((-a) + b)"},
      {"+a", "(+a)"},
      {".-a", "(-a)"},
      {"a+b*c", "(a + (b * c))"},
      {"a*b+c", "((a * b) + c)"},
      {"a-b-c", "((a - b) - c)"},
      {"a/b/c", "((a / b) / c)"},
      {"a/b*c", "((a / b) * c)"},
      {"a*b^c", "(a * (b ^ c))"},
      {"a^b*c", "((a ^ b) * c)"},
      {"(a^b)^c", "((a ^ b) ^ c)"},
      {"a^(b^c)", "(a ^ (b ^ c))"},
      {"(-a)^2", "((-a) ^ 2)"},
      {"2*(-x)", "(2 * (-x))"},
      {"a.*b", "(a .* b)"},
      {"a./b.^2", "(a ./ (b .^ 2))"},
      {"a .+ b .- c", "((a .+ b) .- c)"},
      {"a + b .* c", "(a + (b .* c))"},
      {"not a and b", "((not a) and b)"},
      {"a and not b", "(a and (not b))"},
      {"a or b and c", "(a or (b and c))"},
      {"a and b or c", "((a and b) or c)"},
      {"a or b or c", "((a or b) or c)"},
      {"not a < b", "(not (a < b))"},
      {"a < b and c > d", "((a < b) and (c > d))"},
      {"a + 1 < b * 2", "((a + 1) < (b * 2))"},
      {"a < -b", "(a < (-b))"},
      {"a and -b > 0", "(a and ((-b) > 0))"},
      {"not -a > 0", "(not ((-a) > 0))"},
      {"1:n+1", "(1:(n + 1))"},
      {"-1:2*k:n", "((-1):(2 * k):n)"},
      {"if a > b then a - b else -(a - b)", "(if (a > b) then (a - b) else (-(a - b)))"},
      {"-2*x*lambda", "(-((2 * x) * lambda))"},
  };
  for (const Case& c : cases) EXPECT_EQ(rhs(c.input), c.expected) << "input: " << c.input;
}

TEST(Expressions, Kinds) {
  auto p = parse(
      "model M\nequation\n  x = {1, 2.0, 1e3, a[:, end], 1:3, 1:2:3, if c then 1 else 2, [1, 2; 3, "
      "4], \"s\", true, f(x)};\nend M;\n");
  ASSERT_NE(p->file, nullptr) << p->errors();
  const ast::Expr& array = *p->file->classes[0]->equations[0].rhs;
  ASSERT_EQ(array.kind, ast::ExprKind::Array);
  ASSERT_EQ(array.args.size(), 11u);
  EXPECT_TRUE(array.args[0]->is_integer);
  EXPECT_FALSE(array.args[1]->is_integer);
  EXPECT_FALSE(array.args[2]->is_integer);
  const ast::Expr& ref = *array.args[3];
  ASSERT_EQ(ref.kind, ast::ExprKind::Ref);
  ASSERT_EQ(ref.ref.size(), 1u);
  ASSERT_EQ(ref.ref[0].subscripts.size(), 2u);
  EXPECT_EQ(ref.ref[0].subscripts[0]->kind, ast::ExprKind::Colon);
  EXPECT_EQ(ref.ref[0].subscripts[1]->kind, ast::ExprKind::End);
  EXPECT_EQ(array.args[4]->kind, ast::ExprKind::Range);
  EXPECT_EQ(array.args[4]->args.size(), 2u);
  EXPECT_EQ(array.args[5]->args.size(), 3u);
  EXPECT_EQ(expr_to_string(*array.args[5]->args[1]), "2");  // start:step:stop
  EXPECT_EQ(array.args[6]->kind, ast::ExprKind::If);
  EXPECT_EQ(array.args[6]->args.size(), 3u);
  ASSERT_EQ(array.args[7]->kind, ast::ExprKind::Matrix);
  EXPECT_EQ(array.args[7]->rows.size(), 2u);
  EXPECT_EQ(array.args[7]->rows[1].size(), 2u);
  EXPECT_EQ(array.args[8]->kind, ast::ExprKind::String);
  EXPECT_EQ(array.args[8]->text, "s");
  EXPECT_EQ(array.args[9]->kind, ast::ExprKind::Bool);
  EXPECT_TRUE(array.args[9]->boolean);
  EXPECT_EQ(array.args[10]->kind, ast::ExprKind::Call);
  // Spans: `a[:, end]` is columns 21..29 of line 3.
  EXPECT_EQ(ref.span.line, 3u);
  EXPECT_EQ(ref.span.col, 21u);
  EXPECT_EQ(ref.span.end_col, 29u);
  EXPECT_EQ(ref.ref[0].span.end_col, 29u);
}

// A comprehension and a reduction keep their body, their iterators in the written order, and a
// span for the whole expression and for each iterator name.
TEST(Expressions, ComprehensionAndReductionNodes) {
  auto p = parse(
      "model M\nequation\n  x = {sum(k[i]*y[j] for i in 1:n) for j in {1, 5}, q in 2:3};\nend "
      "M;\n");
  ASSERT_NE(p->file, nullptr) << p->errors();
  const ast::Expr& c = *p->file->classes[0]->equations[0].rhs;
  ASSERT_EQ(c.kind, ast::ExprKind::Comprehension);
  ASSERT_EQ(c.args.size(), 1u);
  ASSERT_EQ(c.iterators.size(), 2u);
  EXPECT_EQ(c.iterators[0].name, "j");
  EXPECT_EQ(c.iterators[0].range->kind, ast::ExprKind::Array);
  EXPECT_EQ(c.iterators[1].name, "q");
  EXPECT_EQ(c.iterators[1].range->kind, ast::ExprKind::Range);
  EXPECT_EQ(c.span.col, 7u);
  EXPECT_EQ(c.iterators[1].span.col, 53u);
  const ast::Expr& r = *c.args[0];
  ASSERT_EQ(r.kind, ast::ExprKind::Reduction);
  ASSERT_EQ(r.ref.size(), 1u);
  EXPECT_EQ(r.ref[0].name, "sum");
  ASSERT_EQ(r.iterators.size(), 1u);
  EXPECT_EQ(r.iterators[0].name, "i");
  EXPECT_EQ(r.iterators[0].span.col, 26u);
  EXPECT_EQ(expr_to_string(*r.args[0]), "(k[i] * y[j])");
}

// ---------------------------------------------------------------- declarations and classes

// The component lines print_ast gives for `model M <decls> end M;`.
std::string decls(const std::string& text) {
  auto p = parse("model M\n" + text + "\nend M;\n");
  if (p->file == nullptr) return "<error> " + p->errors();
  std::string out = ast_text(*p->file);
  return out.substr(out.find('\n') + 1);
}

TEST(Declarations, EveryForm) {
  const Case cases[] = {
      {"parameter Real m = 1 \"mass [kg]\";",
       "  component parameter Real m @2:16 = 1 \"mass [kg]\"\n"},
      {"Real x(start = 1, fixed = true, unit = \"m\"), y(start = 0);",
       "  component Real x @2:6 (start = 1, fixed = true, unit = \"m\")\n"
       "  component Real y @2:46 (start = 0)\n"},
      {"Spring s(k = 100, x(start = 0.1));",
       "  component Spring s @2:8 (k = 100, x(start = 0.1))\n"},
      {"parameter Real A[2,2] = [1, 2; 3, 4];",
       "  component parameter Real A[2, 2] @2:16 = [1, 2; 3, 4]\n"},
      {"Real v[3];", "  component Real v[3] @2:6\n"},
      {"Real[3] r, q[2];", "  component Real[3] r @2:9\n  component Real[3] q[2] @2:12\n"},
      {"Real[:] r;", "  component Real[:] r @2:9\n"},
      {"input Real u; output Real y;",
       "  component input Real u @2:12\n  component output Real y @2:27\n"},
      {"flow Real f; stream Real h; discrete Real d;",
       "  component flow Real f @2:11\n  component stream Real h @2:26\n"
       "  component discrete Real d @2:43\n"},
      {"constant Integer n = 3;", "  component constant Integer n @2:18 = 3\n"},
      {"parameter input Real p;", "  component parameter input Real p @2:22\n"},
      {"input parameter Real p;", "  component parameter input Real p @2:22\n"},
      {"Real x(each start = 0, final fixed = true);",
       "  component Real x @2:6 (each start = 0, final fixed = true)\n"},
      {"Real x(x.start = 1);", "  component Real x @2:6 (x.start = 1)\n"},
      {"Real x(start(y = 1) = 2);", "  component Real x @2:6 (start(y = 1) = 2)\n"},
      {"Real x(start = 1) = 2;", "  component Real x @2:6 (start = 1) = 2\n"},
      {"Modelica.Units.SI.Length l;", "  component Modelica.Units.SI.Length l @2:26\n"},
      {"Real x \"a\" + \"b\";", "  component Real x @2:6 \"ab\"\n"},
      {"Real x annotation(Evaluate = true, Dialog(group = \"g\"));", "  component Real x @2:6\n"},
      {"protected Real h; public Real p;",
       "  component protected Real h @2:16\n  component Real p @2:31\n"},
  };
  for (const Case& c : cases) EXPECT_EQ(decls(c.input), c.expected) << "input: " << c.input;
}

TEST(Declarations, ComponentFieldsAndSharedPrefixes) {
  auto p = parse(
      "model M\n  protected parameter input flow Real[2] a[3](start = {1, 2}) = b, c;\nend M;\n");
  ASSERT_NE(p->file, nullptr) << p->errors();
  const auto& comps = p->file->classes[0]->components;
  ASSERT_EQ(comps.size(), 2u);
  for (const auto& c : comps) {
    EXPECT_TRUE(c.is_protected);
    EXPECT_EQ(c.variability, ast::Variability::Parameter);
    EXPECT_EQ(c.causality, ast::Causality::Input);
    EXPECT_TRUE(c.flow);
    ASSERT_EQ(c.type_dims.size(), 1u);
    EXPECT_EQ(expr_to_string(*c.type_dims[0]), "2");
  }
  EXPECT_EQ(comps[0].dims.size(), 1u);
  EXPECT_EQ(comps[1].dims.size(), 0u);
  EXPECT_EQ(comps[1].mod, nullptr);
  EXPECT_EQ(modification_to_string(*comps[0].mod), "(start = {1, 2}) = b");
}

TEST(Classes, FileLevelConstructs) {
  auto p = parse(R"(within Lib.Sub;
package P "a package"
  import Modelica.Math.*;
  import Modelica.Math.sin;
  import SI = Modelica.Units.SI;
  type Length = Real(unit = "m", min = 0) "a length";
  connector Flange
    Real s;
    flow Real f;
  end Flange;
  partial model Base
    parameter Real k = 1;
  end Base;
  record R Real a; end R;
  block B input Real u; output Real y; equation y = u; end B;
  function F input Real u; output Real y; end F;
  encapsulated model Spring "spring"
    extends Base(k = 100, final x.start = 2);
    Flange a, b;
  equation
    a.f + b.f = 0 "balance";
    connect(a.s, b[1].s);
  equation
    a.s = 0;
  annotation(Icon(graphics = {Line(points = {{0, 0}, {1, 1}}, color = {0, 0, 255})}));
  end Spring;
  annotation(version = "1.0");
end P;
)");
  ASSERT_NE(p->file, nullptr) << p->errors();
  EXPECT_EQ(ast_text(*p->file), R"(within Lib.Sub
package P @2:9 "a package"
  import Modelica.Math.* @3:10
  import Modelica.Math.sin @4:10
  import SI = Modelica.Units.SI @5:15
  type Length @6:8 = Real(unit = "m", min = 0) "a length"
  connector Flange @7:13
    component Real s @8:10
    component flow Real f @9:15
  model Base @11:17
    component parameter Real k @12:20 = 1
  record R @14:10
    component Real a @14:17
  block B @15:9
    component input Real u @15:22
    component output Real y @15:37
    equation @15:49 y = u
  function F @16:12
    component input Real u @16:25
    component output Real y @16:40
  model Spring @17:22 "spring"
    extends Base @18:13 (k = 100, final x.start = 2)
    component Flange a @19:12
    component Flange b @19:15
    equation @21:5 (a.f + b.f) = 0 "balance"
    connect @22:5 a.s, b[1].s
    equation @24:5 a.s = 0
)");
  const ast::ClassDef& pkg = *p->file->classes[0];
  ASSERT_EQ(pkg.imports.size(), 3u);
  EXPECT_TRUE(pkg.imports[0].wildcard);
  EXPECT_EQ(pkg.imports[0].path, "Modelica.Math");
  EXPECT_EQ(pkg.imports[1].path, "Modelica.Math.sin");
  EXPECT_EQ(pkg.imports[2].alias, "SI");
  EXPECT_EQ(pkg.imports[2].path, "Modelica.Units.SI");
  const ast::ClassDef& length = *pkg.classes[0];
  EXPECT_EQ(length.kind, ast::ClassKind::Type);
  EXPECT_EQ(length.short_base, "Real");
  ASSERT_NE(length.short_mod, nullptr);
  EXPECT_EQ(length.short_mod->args.size(), 2u);
  EXPECT_EQ(pkg.classes[1]->kind, ast::ClassKind::Connector);
  EXPECT_EQ(pkg.classes[3]->kind, ast::ClassKind::Record);
  EXPECT_EQ(pkg.classes[4]->kind, ast::ClassKind::Block);
  EXPECT_EQ(pkg.classes[5]->kind, ast::ClassKind::Function);
  const ast::ClassDef& spring = *pkg.classes[6];
  ASSERT_EQ(spring.extends.size(), 1u);
  EXPECT_EQ(spring.extends[0].base, "Base");
  EXPECT_TRUE(spring.extends[0].mod->args[1].final_);
  EXPECT_EQ(spring.extends[0].mod->args[1].path, (std::vector<std::string>{"x", "start"}));
  EXPECT_EQ(spring.equations[1].kind, ast::EquationKind::Connect);
  EXPECT_EQ(expr_to_string(*spring.equations[1].rhs), "b[1].s");
  EXPECT_EQ(spring.equations[0].description, "balance");
}

TEST(Classes, FunctionWithAlgorithm) {
  auto p = parse(
      "function f \"sums\"\n"
      "  input Real x;\n"
      "  input Real c[:] = {1, 2};\n"
      "  output Real y;\n"
      "  output Integer n;\n"
      "protected\n"
      "  Real t;\n"
      "algorithm\n"
      "  t := x*x;\n"
      "  (y, , n) := g(x, k = 2);\n"
      "  for i in 1:3 loop\n"
      "    if i > 1 then\n"
      "      y := y + c[i];\n"
      "    elseif x < 0 then\n"
      "      return;\n"
      "    else\n"
      "      y := 0;\n"
      "    end if;\n"
      "  end for;\n"
      "  while n < 3 loop\n"
      "    n := n + 1;\n"
      "  end while;\n"
      "end f;\n");
  ASSERT_TRUE(p->file) << p->errors();
  EXPECT_EQ(ast_text(*p->file),
            "function f @1:10 \"sums\"\n"
            "  component input Real x @2:14\n"
            "  component input Real c[:] @3:14 = {1, 2}\n"
            "  component output Real y @4:15\n"
            "  component output Integer n @5:18\n"
            "  component protected Real t @7:8\n"
            "  algorithm\n"
            "    assign @9:3 t := (x * x)\n"
            "    assign @10:3 (y, , n) := g(x, k = 2)\n"
            "    for @11:3 i in (1:3)\n"
            "      if @12:5 (i > 1)\n"
            "        assign @13:7 y := (y + c[i])\n"
            "      elseif (x < 0)\n"
            "        return @15:7\n"
            "      else\n"
            "        assign @17:7 y := 0\n"
            "    while @20:3 (n < 3)\n"
            "      assign @21:5 n := (n + 1)\n");
  const ast::ClassDef& f = *p->file->classes.at(0);
  EXPECT_EQ(f.kind, ast::ClassKind::Function);
  ASSERT_EQ(f.algorithm_spans.size(), 1u);
  EXPECT_EQ(f.algorithm_spans[0].line, 8u);
  // (y, , n) := g(x, k = 2): three places, the middle one empty; one positional, one named
  const ast::Statement& multi = f.algorithm.at(1);
  ASSERT_EQ(multi.kind, ast::StatementKind::MultiAssign);
  ASSERT_EQ(multi.targets.size(), 3u);
  EXPECT_TRUE(multi.targets[0] && !multi.targets[1] && multi.targets[2]);
  const ast::Expr& call = *multi.value;
  EXPECT_EQ(call.kind, ast::ExprKind::Call);
  EXPECT_EQ(call.arg_names, (std::vector<std::string>{"", "k"}));
  ASSERT_EQ(call.arg_spans.size(), 2u);
  EXPECT_EQ(call.arg_spans[1].col, 20u);
  // a call without named arguments has no names at all
  EXPECT_TRUE(f.algorithm.at(0).value->arg_names.empty());
}

TEST(Equations, OutputLists) {
  // `(a, , b) = f(...)` is an equation of several outputs; `(c) = g(y)` stays a plain equation
  auto p = parse("model M\nequation\n  (a, , b) = f(x, k = 1);\n  (c) = g(y);\nend M;\n");
  ASSERT_TRUE(p->file) << p->errors();
  EXPECT_EQ(ast_text(*p->file),
            "model M @1:7\n"
            "  equation @3:3 (a, , b) = f(x, k = 1)\n"
            "  equation @4:3 c = g(y)\n");
  const auto& eqs = p->file->classes.at(0)->equations;
  ASSERT_EQ(eqs.size(), 2u);
  EXPECT_EQ(eqs[0].kind, ast::EquationKind::Outputs);
  ASSERT_EQ(eqs[0].targets.size(), 3u);
  EXPECT_FALSE(eqs[0].targets[1]);
  EXPECT_EQ(eqs[0].span.end_col, 24u);  // the closing parenthesis of the call
  EXPECT_EQ(eqs[1].kind, ast::EquationKind::Simple);
}

TEST(Classes, KindNames) {
  EXPECT_STREQ(ast::class_kind_name(ast::ClassKind::Model), "model");
  EXPECT_STREQ(ast::class_kind_name(ast::ClassKind::Connector), "connector");
  EXPECT_STREQ(ast::class_kind_name(ast::ClassKind::Record), "record");
  EXPECT_STREQ(ast::class_kind_name(ast::ClassKind::Block), "block");
  EXPECT_STREQ(ast::class_kind_name(ast::ClassKind::Package), "package");
  EXPECT_STREQ(ast::class_kind_name(ast::ClassKind::Type), "type");
  EXPECT_STREQ(ast::class_kind_name(ast::ClassKind::Function), "function");
}

TEST(Classes, CommentsAreIgnoredAndWithinMayBeEmpty) {
  auto p = parse(
      "\xEF\xBB\xBF// leading comment\nwithin;\n/* block\n comment */ model /* here "
      "*/ M // trailing\nend M;\n");
  ASSERT_NE(p->file, nullptr) << p->errors();
  EXPECT_EQ(p->file->within, "");
  EXPECT_EQ(ast_text(*p->file), "model M @4:30\n");
}

// ---------------------------------------------------------------- equations

TEST(Equations, ForAndIf) {
  auto p = parse(R"(model M
equation
  x = 1 "described";
  for i in 1:n, j in 1:2:m loop
    a[i, j] = b[j, i];
    for k in v loop
      c[k] = 0;
    end for;
  end for;
  if x > 0 then
    y = 1;
    z = 1;
  elseif x < 0 then
    y = -1;
  else
    y = 0;
  end if;
  if c then
    y = 2;
  end if "described if";
end M;
)");
  ASSERT_NE(p->file, nullptr) << p->errors();
  EXPECT_EQ(ast_text(*p->file), R"(model M @1:7
  equation @3:3 x = 1 "described"
  for @4:3 i in (1:n), j in (1:2:m)
    equation @5:5 a[i, j] = b[j, i]
    for @6:5 k in v
      equation @7:7 c[k] = 0
  if @10:3 (x > 0)
    equation @11:5 y = 1
    equation @12:5 z = 1
  elseif (x < 0)
    equation @14:5 y = (-1)
  else
    equation @16:5 y = 0
  if @18:3 c "described if"
    equation @19:5 y = 2
)");
  const auto& eqs = p->file->classes[0]->equations;
  ASSERT_EQ(eqs.size(), 4u);
  EXPECT_EQ(eqs[1].kind, ast::EquationKind::For);
  ASSERT_EQ(eqs[1].indices.size(), 2u);
  EXPECT_EQ(eqs[1].indices[1].name, "j");
  EXPECT_EQ(eqs[1].indices[1].span.col, 17u);
  EXPECT_EQ(eqs[1].span.end_line, 9u);
  EXPECT_EQ(eqs[2].conditions.size(), 2u);
  EXPECT_EQ(eqs[2].branches.size(), 3u);
  EXPECT_EQ(eqs[2].branches[0].size(), 2u);
  EXPECT_EQ(eqs[3].conditions.size(), 1u);
  EXPECT_EQ(eqs[3].branches.size(), 1u);
}

// ---------------------------------------------------------------- syntax errors

// The rendered diagnostics for a broken file named e.mbs.
std::string errors_of(const std::string& text) {
  auto p = parse(text, "e.mbs");
  EXPECT_EQ(p->file, nullptr) << "parsed without errors: " << text;
  EXPECT_TRUE(p->diags.has_errors());
  return p->errors();
}

TEST(SyntaxErrors, MissingSemicolonAfterDeclarationPointsAfterIt) {
  EXPECT_EQ(errors_of("model Pendulum\n  Real x(start = 1)\n  Real y;\nend Pendulum;\n"),
            "e.mbs:2:20: error: expected ';' after declaration, found 'Real'\n"
            "    Real x(start = 1)\n"
            "                     ^\n");
}

TEST(SyntaxErrors, MissingSemicolonAfterEquation) {
  EXPECT_EQ(errors_of("model M\nequation\n  x = 1\nend M;\n"),
            "e.mbs:3:8: error: expected ';' after equation, found 'end'\n"
            "    x = 1\n"
            "         ^\n");
}

TEST(SyntaxErrors, MissingEndNamesTheClass) {
  EXPECT_EQ(errors_of("model Pendulum\n  Real x;\nequation\n  x = 1;\n"),
            "e.mbs:4:9: error: missing 'end Pendulum;' for model 'Pendulum'\n"
            "    x = 1;\n"
            "          ^\n"
            "e.mbs:1:7: note: model 'Pendulum' begins here\n"
            "  model Pendulum\n"
            "        ^~~~~~~~\n");
}

TEST(SyntaxErrors, EndNameMismatch) {
  EXPECT_EQ(errors_of("model Pendulum\n  Real x;\nend Pendel;\n"),
            "e.mbs:3:5: error: 'end Pendel' does not match 'Pendulum'\n"
            "  end Pendel;\n"
            "      ^~~~~~\n"
            "e.mbs:1:7: note: model 'Pendulum' begins here\n"
            "  model Pendulum\n"
            "        ^~~~~~~~\n");
}

TEST(SyntaxErrors, Table) {
  const Case cases[] = {
      {"model M\n  Real x;\n  x = 1;\nend M;\n",
       "e.mbs:3:5: error: expected a component name, found '='\n"
       "    x = 1;\n"
       "      ^\n"
       "help: equations belong in an 'equation' section\n"},
      {"model M\nequation\n  x = ;\nend M;\n",
       "e.mbs:3:7: error: expected an expression, found ';'\n"
       "    x = ;\n"
       "        ^\n"},
      {"model M\nequation\n  x = (1 + 2;\nend M;\n",
       "e.mbs:3:13: error: expected ')', found ';'\n"
       "    x = (1 + 2;\n"
       "              ^\n"},
      {"model M\nequation\n  x = 2 3;\nend M;\n",
       "e.mbs:3:9: error: expected ';' after equation, found '3'\n"
       "    x = 2 3;\n"
       "          ^\n"},
      {"model M\nequation\n  x + = 1;\nend M;\n",
       "e.mbs:3:7: error: expected an expression, found '='\n"
       "    x + = 1;\n"
       "        ^\n"},
      {"model M\nequation\n  for i in 1:3 loop\n    x = 1;\n  end;\nend M;\n",
       "e.mbs:5:6: error: expected 'for' after 'end', found ';'\n"
       "    end;\n"
       "       ^\n"},
      {"model M\nequation\n  if c then\n    x = 1;\n  end for;\nend M;\n",
       "e.mbs:5:7: error: expected 'if' after 'end', found 'for'\n"
       "    end for;\n"
       "        ^~~\n"},
      {"model M\nequation\n  x = 1;\nend\n",
       "e.mbs:4:4: error: expected the class name 'M' after 'end', found end of file\n"
       "  end\n"
       "     ^\n"},
      {"model M\nend M\n",
       "e.mbs:2:6: error: expected ';' after 'end M', found end of file\n"
       "  end M\n"
       "       ^\n"},
      {"model M\nend M;\nend M;\n",
       "e.mbs:3:1: error: expected a class definition, found 'end'\n"
       "  end M;\n"
       "  ^~~\n"},
      {"foo bar;\n",
       "e.mbs:1:1: error: expected a class definition, found 'foo'\n"
       "  foo bar;\n"
       "  ^~~\n"},
      {"model M\n  Real x;;\nend M;\n",
       "e.mbs:2:10: error: unexpected ';'\n"
       "    Real x;;\n"
       "           ^\n"},
      {"model M\n  Real x(start = 1, fixed = true\n  Real y;\nend M;\n",
       "e.mbs:2:33: error: expected ',' or ')', found 'Real'\n"
       "    Real x(start = 1, fixed = true\n"
       "                                  ^\n"},
      {"model M\n  Real x(;\nend M;\n",
       "e.mbs:2:10: error: expected a modifier or ')', found ';'\n"
       "    Real x(;\n"
       "           ^\n"},
      {"model M\n  Real 5;\nend M;\n",
       "e.mbs:2:8: error: expected a component name, found '5'\n"
       "    Real 5;\n"
       "         ^\n"},
      {"within A.B\nmodel M end M;\n",
       "e.mbs:1:11: error: expected ';' after within clause, found 'model'\n"
       "  within A.B\n"
       "            ^\n"},
      {"model M\nequation\n  connect(a, b;\nend M;\n",
       "e.mbs:3:15: error: expected ')', found ';'\n"
       "    connect(a, b;\n"
       "                ^\n"},
      {"model M\nequation\n  x + y;\nend M;\n",
       "e.mbs:3:8: error: expected '=', found ';'\n"
       "    x + y;\n"
       "         ^\n"
       "help: an equation has the form 'expression = expression;' (the only call equation is "
       "reinit(x, e), inside a when-equation)\n"},
      {"model\n",
       "e.mbs:1:6: error: expected a class name, found end of file\n"
       "  model\n"
       "       ^\n"},
      // Unsupported Modelica: one error.
      {"model M\n  Real x;\nexternal equation\n  x = 2;\nequation\n  der(x) = 1;\nend M;\n",
       "e.mbs:3:1: error: the Modelica keyword 'external' is not supported\n"
       "  external equation\n"
       "  ^~~~~~~~\n"},
      // Assignments belong in algorithms, equations in equation sections.
      {"model M\n  Real x;\nequation\n  x := 1;\nend M;\n",
       "e.mbs:4:5: error: ':=' outside an algorithm section\n"
       "    x := 1;\n"
       "      ^~\n"
       "help: an equation is written 'a = b;'; assignments ':=' belong in the 'algorithm' section "
       "of a function\n"},
      {"function f\n  input Real x;\n  output Real y;\nalgorithm\n  y = x;\nend f;\n",
       "e.mbs:5:5: error: expected ':=', found '='\n"
       "    y = x;\n"
       "      ^\n"
       "help: an algorithm assigns with ':=' (a = b is an equation)\n"},
      {"function f\n  output Real y;\nalgorithm\n  while true loop\n    y := 1;\n",
       "e.mbs:5:12: error: missing 'end while;'\n"
       "      y := 1;\n"
       "             ^\n"
       "e.mbs:4:3: note: 'while' begins here\n"
       "    while true loop\n"
       "    ^~~~~\n"},
      {"model M\n  expandable Real x;\nend M;\n",
       "e.mbs:2:3: error: the Modelica keyword 'expandable' is not supported\n"
       "    expandable Real x;\n"
       "    ^~~~~~~~~~\n"
       "help: expandable connectors (Modelica 3.6, section 9.1.3) are not supported yet; declare "
       "every variable of the connector\n"},
      // Nested class closed with the outer name.
      {"model M\n  model N\n    Real x;\nend M;\n",
       "e.mbs:4:5: error: 'end M' does not match 'N'\n"
       "  end M;\n"
       "      ^\n"
       "e.mbs:2:9: note: model 'N' begins here\n"
       "    model N\n"
       "          ^\n"
       "help: add 'end N;' before 'end M;'\n"},
      // Errors the parser finds after the grammar accepted the input.
      {"model M\nequation\n  x = a^b^c;\nend M;\n",
       "e.mbs:3:10: error: '^' is not associative; write (a^b)^c or a^(b^c)\n"
       "    x = a^b^c;\n"
       "           ^\n"},
      {"model M\nequation\n  x = a < b < c;\nend M;\n",
       "e.mbs:3:13: error: comparisons cannot be chained; write (a < b) and (b < c)\n"
       "    x = a < b < c;\n"
       "              ^\n"},
      {"model M\nequation\n  x = 2*-1;\nend M;\n",
       "e.mbs:3:9: error: unexpected '-'\n"
       "    x = 2*-1;\n"
       "          ^\n"
       "help: a sign may only start an expression: write the signed operand in parentheses, as "
       "in 2*(-x)\n"},
      {"model M\nequation\n  x = --1;\nend M;\n",
       "e.mbs:3:8: error: unexpected '-'\n"
       "    x = --1;\n"
       "         ^\n"
       "help: a sign may only start an expression: write the signed operand in parentheses, as "
       "in 2*(-x)\n"},
      {"model M\nequation\n  x = not not a;\nend M;\n",
       "e.mbs:3:11: error: unexpected 'not'\n"
       "    x = not not a;\n"
       "            ^~~\n"
       "help: 'not' applies to a whole comparison: write the operand in parentheses, as in a "
       "and (not b)\n"},
      {"model M\n  Real x = end;\nend M;\n",
       "e.mbs:2:12: error: expected an expression, found 'end'\n"
       "    Real x = end;\n"
       "             ^~~\n"},
      {"model M\n  Real x = [1, end];\nend M;\n",
       "e.mbs:2:16: error: 'end' can only be used inside array subscripts\n"
       "    Real x = [1, end];\n"
       "                 ^~~\n"},
      {"model M\n  parameter constant Real x;\n  input input Real y;\nend M;\n",
       "e.mbs:2:13: error: conflicting prefixes 'parameter' and 'constant'\n"
       "    parameter constant Real x;\n"
       "              ^~~~~~~~\n"
       "e.mbs:3:9: error: duplicate prefix 'input'\n"
       "    input input Real y;\n"
       "          ^~~~~\n"},
      {"model M\n  Real x(fixed);\nend M;\n",
       "e.mbs:2:10: error: modification of 'fixed' has no value; write 'fixed = ...' or "
       "'fixed(...)'\n"
       "    Real x(fixed);\n"
       "           ^~~~~\n"},
      {"model M\n  Real x = \"bad \\q\";\nend M;\n",
       "e.mbs:2:12: error: unknown escape sequence '\\q' in string\n"
       "    Real x = \"bad \\q\";\n"
       "             ^~~~~~~~\n"},
      {"model M\n  Real x = 1e999;\nend M;\n",
       "e.mbs:2:12: error: number '1e999' is out of range\n"
       "    Real x = 1e999;\n"
       "             ^~~~~\n"},
      {"model M\nequation\n  x = sum(k = i for i in 1:3);\nend M;\n",
       "e.mbs:3:11: error: the named argument 'k = ...' is not supported\n"
       "    x = sum(k = i for i in 1:3);\n"
       "            ^~~~~\n"},
      {"model M\nequation\n  x = {i for i in 1:3,};\nend M;\n",
       "e.mbs:3:23: error: expected a loop index name, found '}'\n"
       "    x = {i for i in 1:3,};\n"
       "                        ^\n"},
      {"model M\nequation\n  x = a[1](2);\nend M;\n",
       "e.mbs:3:7: error: a function name cannot have subscripts\n"
       "    x = a[1](2);\n"
       "        ^~~~\n"},
      {"type T = input Real;\n",
       "e.mbs:1:10: error: unexpected 'input'\n"
       "  type T = input Real;\n"
       "           ^~~~~\n"},
      // Several independent errors in one file are all reported, without cascades.
      {"model M\n  Real 3;\n  parameter Real k = ;\nequation\n  x = ;\n  y = 1\nend M;\n",
       "e.mbs:2:8: error: expected a component name, found '3'\n"
       "    Real 3;\n"
       "         ^\n"
       "e.mbs:3:22: error: expected an expression, found ';'\n"
       "    parameter Real k = ;\n"
       "                       ^\n"
       "e.mbs:5:7: error: expected an expression, found ';'\n"
       "    x = ;\n"
       "        ^\n"
       "e.mbs:6:8: error: expected ';' after equation, found 'end'\n"
       "    y = 1\n"
       "         ^\n"},
  };
  for (const Case& c : cases) EXPECT_EQ(errors_of(c.input), c.expected) << "input:\n" << c.input;
}

TEST(SyntaxErrors, LexicalErrors) {
  const Case cases[] = {
      {"model M\n  Real $x;\nend M;\n",
       "e.mbs:2:8: error: invalid character '$' in source\n"
       "    Real $x;\n"
       "         ^\n"},
      {"model M\n  Real \xC3\xA9;\nend M;\n",
       "e.mbs:2:8: error: invalid character '\xC3\xA9' (U+00E9) in source\n"
       "    Real \xC3\xA9;\n"
       "         ^\n"},
      {"model M\n  Real \x01x;\nend M;\n",
       "e.mbs:2:8: error: invalid character U+0001 in source\n"
       "    Real ?x;\n"
       "         ^\n"},
      {"model M\n  String s = \"abc;\nend M;\n",
       "e.mbs:2:14: error: unterminated string literal\n"
       "    String s = \"abc;\n"
       "               ^\n"},
      {"model M /* forgot\n  Real x;\nend M;\n",
       "e.mbs:1:9: error: unterminated block comment\n"
       "  model M /* forgot\n"
       "          ^~\n"},
      {"model M\n  Real x \"caf\xC3\xA9 \xFF\";\nend M;\n",
       "e.mbs:2:16: error: invalid UTF-8 byte sequence in source\n"
       "    Real x \"caf\xC3\xA9 ?\";\n"
       "                 ^\n"},
      {"", "e.mbs:1:1: error: file contains no model\n  \n  ^\n"},
      {"  // only a comment\n\n",
       "e.mbs:1:1: error: file contains no model\n    // only a comment\n  ^\n"},
      {"within A;\n", "e.mbs:1:1: error: file contains no model\n  within A;\n  ^\n"},
  };
  for (const Case& c : cases) EXPECT_EQ(errors_of(c.input), c.expected) << "input:\n" << c.input;
}

TEST(SyntaxErrors, NulBytesAreInvalidCharacters) {
  std::string text = std::string("model M\n  Real ") + '\0' + "x;\nend M;\n";
  EXPECT_EQ(errors_of(text),
            "e.mbs:2:8: error: invalid character U+0000 in source\n"
            "    Real ?x;\n"
            "         ^\n");
}

TEST(SyntaxErrors, ErrorLimitStopsTheParse) {
  auto p = parse("model M\n" + repeat("  Real 1;\n", 1000) + "end M;\n", "e.mbs");
  EXPECT_EQ(p->file, nullptr);
  EXPECT_EQ(p->diags.diagnostics().size(), 21u);  // the default limit of 20, then the note
  EXPECT_EQ(p->diags.diagnostics().back().kind, DiagKind::too_many_errors);
  EXPECT_NE(p->errors().find("note: too many errors, stopping\n"), std::string::npos);
}

TEST(SyntaxErrors, ErrorsOfOneFileDoNotLeakIntoTheNext) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  uint32_t bad = sm.add_file("bad.mbs", "model M\nequation\n  x = ;\nend M;\n");
  uint32_t good = sm.add_file("good.mbs", kPendulum);
  EXPECT_EQ(parse_file(sm, bad, diags), nullptr);
  EXPECT_NE(parse_file(sm, good, diags), nullptr);
  EXPECT_EQ(diags.error_count(), 1u);
}

// Every syntax-phase kind is produced by some input (the driver's file_not_found excepted).
TEST(SyntaxErrors, EveryParserKindIsProduced) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  diags.set_error_limit(1000);
  const std::string inputs[] = {
      "model M \"\xFF\"; end M;",
      "model M Real $x; end M;",
      "model M Real x end M;",
      "model M equation x = " + repeat("(", 300) + ";end M;",
      "",
      "model M end N;",
      "model M String s = \"abc",
      "model M /* abc",
      "model M equation x = " + repeat("a + ", 1500) + "a; end M;",
      "model M equation x = " + repeat("a + ", 30000) + "a; end M;",
      "model M Real x = 1e400; end M;",
      "model M equation initial algorithm x := 1; end M;",
      "model M operator Real x; end M;",
  };
  for (const auto& text : inputs) parse_file(sm, sm.add_file("k.mbs", text), diags);
  SourceManager sm2;
  DiagnosticEngine limited(sm2);
  limited.set_error_limit(2);
  parse_file(sm2, sm2.add_file("k.mbs", "model M Real 1; Real 2; Real 3; end M;"), limited);

  std::set<DiagKind> seen;
  for (DiagKind k : diags.kinds_seen()) seen.insert(k);
  for (DiagKind k : limited.kinds_seen()) seen.insert(k);
  for (DiagKind k :
       {DiagKind::invalid_utf8, DiagKind::invalid_character, DiagKind::syntax_error,
        DiagKind::nesting_too_deep, DiagKind::empty_file, DiagKind::end_name_mismatch,
        DiagKind::unterminated_string, DiagKind::unterminated_comment,
        DiagKind::expression_too_deep, DiagKind::expression_too_long, DiagKind::number_out_of_range,
        DiagKind::unsupported, DiagKind::too_many_errors}) {
    EXPECT_TRUE(seen.count(k)) << "never produced: " << diag_info(k).name;
  }
}

// ---------------------------------------------------------------- limits

std::string in_equation(const std::string& rhs_text) {
  return "model M\nequation\n  x = " + rhs_text + ";\nend M;\n";
}

TEST(Limits, BracketNestingUpToTheLimitIsAccepted) {
  for (const char* open_close : {"()", "{}", "[]"}) {
    std::string open(1, open_close[0]), close(1, open_close[1]);
    auto ok = parse(in_equation(repeat(open, kMaxNesting) + "1" + repeat(close, kMaxNesting)));
    EXPECT_NE(ok->file, nullptr) << open << ": " << ok->errors();
    auto deep = parse(
        in_equation(repeat(open, kMaxNesting + 1) + "1" + repeat(close, kMaxNesting + 1)), "e.mbs");
    EXPECT_EQ(deep->file, nullptr);
    ASSERT_EQ(deep->diags.diagnostics().size(), 1u) << deep->errors();
    const Diagnostic& d = deep->diags.diagnostics()[0];
    EXPECT_EQ(d.kind, DiagKind::nesting_too_deep);
    EXPECT_EQ(d.message, "expression or bracket nesting deeper than 256 levels");
    EXPECT_EQ(d.span.line, 3u);
    EXPECT_EQ(d.span.col, 7u + 256u);  // the 257th bracket
  }
}

TEST(Limits, NestingWithoutBracketsUpToTheLimitIsAccepted) {
  auto nested_if = [](int n) {
    return in_equation(repeat("if c then ", n) + "1" + repeat(" else 2", n));
  };
  auto nested_for = [](int n) {
    return "model M\nequation\n" + repeat("for i in 1:2 loop\n", n) + "x = 1;\n" +
           repeat("end for;\n", n) + "end M;\n";
  };
  auto nested_ifeq = [](int n) {
    return "model M\nequation\n" + repeat("if c then\n", n) + "x = 1;\n" + repeat("end if;\n", n) +
           "end M;\n";
  };
  auto nested_class = [](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += "model M" + std::to_string(i) + "\n";
    for (int i = n - 1; i >= 0; --i) s += "end M" + std::to_string(i) + ";\n";
    return s;
  };
  for (auto make : {+nested_if, +nested_for, +nested_ifeq, +nested_class}) {
    auto ok = parse(make(kMaxNesting));
    EXPECT_NE(ok->file, nullptr) << ok->errors();
    auto deep = parse(make(kMaxNesting + 1));
    EXPECT_EQ(deep->file, nullptr);
    ASSERT_EQ(deep->diags.diagnostics().size(), 1u) << deep->errors();
    EXPECT_EQ(deep->diags.diagnostics()[0].kind, DiagKind::nesting_too_deep);
  }
}

TEST(Limits, ExpressionDepth) {
  // n binary operators make a tree of depth n + 1.
  auto ok = parse(in_equation(repeat("a + ", kMaxExprDepth - 1) + "a"));
  EXPECT_NE(ok->file, nullptr) << ok->errors();
  auto deep = parse(in_equation(repeat("a + ", kMaxExprDepth) + "a"), "e.mbs");
  EXPECT_EQ(deep->file, nullptr);
  EXPECT_EQ(
      deep->errors(),
      "e.mbs:3:7: error: expression is nested more than 1000 operators deep\n"
      "    x = " +
          repeat("a + ", 38) +
          "a ...\n"
          "        ^" +
          repeat("~", 153) +
          "\n"
          "help: a chain of n operators counts as n levels; split the expression into several "
          "equations with intermediate variables\n");
}

// ---------------------------------------------------------------- robustness

// Hostile input must end with at least one error, never a crash, hang or stack overflow.
// (Timing is left to the ctest timeout.)
void expect_rejected(const std::string& what, const std::string& text) {
  auto p = parse(text, "r.mbs");
  EXPECT_EQ(p->file, nullptr) << what;
  EXPECT_TRUE(p->diags.has_errors()) << what;
  EXPECT_FALSE(p->errors().empty()) << what;
  EXPECT_LE(p->diags.diagnostics().size(), 21u) << what;
}

TEST(Robustness, DeepNestingOfEveryKind) {
  const size_t n = 100000;
  const std::string pre = "model M\nequation\n  x = ", post = ";\nend M;\n";
  expect_rejected("parens", pre + repeat("(", n) + "1" + repeat(")", n) + post);
  expect_rejected("bare parens", repeat("(", n));
  expect_rejected("braces", pre + repeat("{", n) + "1" + repeat("}", n) + post);
  expect_rejected("brackets", pre + repeat("[", n) + "1" + repeat("]", n) + post);
  expect_rejected("subscripts", pre + "a" + repeat("[b", n) + repeat("]", n) + post);
  expect_rejected("calls", pre + repeat("f(", n) + repeat(")", n) + post);
  expect_rejected("unary minus", pre + repeat("-", n) + "1" + post);
  expect_rejected("unary minus, spaced", pre + repeat("- ", n) + "1" + post);
  expect_rejected("parenthesised minus", pre + repeat("-(", n) + "1" + repeat(")", n) + post);
  expect_rejected("not", pre + repeat("not ", n) + "true" + post);
  expect_rejected("if-expressions",
                  pre + repeat("if c then ", n) + "1" + repeat(" else 2", n) + post);
  expect_rejected("open if-expressions", pre + repeat("if c then ", n));
  expect_rejected("modifications",
                  "model M\n  Real x" + repeat("(a", n) + repeat(")", n) + ";\nend M;\n");
  expect_rejected("modifications with values", "model M\n  Real x(" + repeat("a(", n) + "b = 1" +
                                                   repeat(")", n) + ");\nend M;\n");
  expect_rejected("for loops", "model M\nequation\n" + repeat("for i in 1:2 loop\n", n) +
                                   "x = 1;\n" + repeat("end for;\n", n) + "end M;\n");
  expect_rejected("if equations", "model M\nequation\n" + repeat("if c then\n", n) + "x = 1;\n" +
                                      repeat("end if;\n", n) + "end M;\n");
  std::string classes;
  for (size_t i = 0; i < n; ++i) classes += "model M" + std::to_string(i) + "\n";
  expect_rejected("classes", classes);
  expect_rejected("open classes", repeat("package P ", n));
}

TEST(Robustness, LongInput) {
  const std::string pre = "model M\nequation\n  x = ", post = ";\nend M;\n";
  const size_t mb = size_t{1} << 20;
  expect_rejected("1 MB sum", pre + repeat("a+", mb / 2) + "a" + post);
  expect_rejected("1 MB power chain", pre + repeat("a^", mb / 2) + "a" + post);
  expect_rejected("1 MB sum at top level", repeat("a+", mb / 2));
  expect_rejected("1 MB of and", pre + repeat("a and ", mb / 6) + "a" + post);
  expect_rejected("1 MB of punctuation", repeat(";", mb));
  expect_rejected("1 MB of ends", repeat("end ", mb / 4));
  expect_rejected("1 MB of dollars", repeat("$", mb));
  expect_rejected("1 MB name, no class", repeat("a", mb));
  // Long but valid: a 1 MB identifier, string and component reference.
  for (const std::string& operand :
       {repeat("a", mb), "\"" + repeat("s", mb) + "\"", repeat("a.", 100000) + "a"}) {
    auto p = parse(pre + operand + post);
    EXPECT_NE(p->file, nullptr) << p->errors().substr(0, 300);
  }
  // Many statements.
  auto many = parse("model M\nequation\n" + repeat("x = 1;\n", 50000) + "end M;\n");
  ASSERT_NE(many->file, nullptr);
  EXPECT_EQ(many->file->classes[0]->equations.size(), 50000u);
}

TEST(Robustness, Junk) {
  std::mt19937 rng(12345);
  const size_t mb = size_t{1} << 20;
  std::string bytes(mb, '\0'), ascii(mb, ' '), tokens;
  for (auto& c : bytes) c = static_cast<char>(rng() & 0xFF);
  for (auto& c : ascii) c = static_cast<char>(32 + rng() % 95);
  const char* pieces[] = {"(",       ")",         "[", "]", "{",         "}",   "model", "end",
                          "a",       "1",         ";", "=", "+",         "for", "if",    "then",
                          "loop",    "equation",  ",", ".", "\"s\"",     "not", "in",    "else",
                          "connect", "parameter", ":", "^", "annotation"};
  while (tokens.size() < mb) {
    tokens += pieces[rng() % (sizeof(pieces) / sizeof(pieces[0]))];
    tokens += ' ';
  }
  expect_rejected("random bytes", bytes);
  expect_rejected("random printable", ascii);
  expect_rejected("random tokens", tokens);
  expect_rejected("NUL bytes", std::string(1000, '\0'));
  expect_rejected("all bytes", [] {
    std::string s;
    for (int i = 0; i < 256; ++i) s += static_cast<char>(i);
    return s;
  }());
  expect_rejected("overlong UTF-8", "model M\n  Real \xC0\xAFx;\nend M;\n");
  expect_rejected("surrogate", "model M\n  String s = \"\xED\xA0\x80\";\nend M;\n");
  expect_rejected("truncated UTF-8", "model M \"\xE2\x82");
  expect_rejected("whitespace only", " \t\r\n\f\n  \n");
  expect_rejected("comment only", "/* a */ // b\n");
  expect_rejected("unterminated comment", "model M /*" + repeat("x", 100000));
  expect_rejected("unterminated string", "model M \"" + repeat("x\n", 100000));
}

TEST(Robustness, InvalidUtf8ReportsTheFirstBadByte) {
  auto p = parse("model M\n  Real x;\n  Real \xC3\xA9t\xC3\xA9\xFE;\nend M;\n", "u.mbs");
  ASSERT_EQ(p->diags.diagnostics().size(), 1u);
  const Diagnostic& d = p->diags.diagnostics()[0];
  EXPECT_EQ(d.kind, DiagKind::invalid_utf8);
  EXPECT_EQ(d.span.line, 3u);
  EXPECT_EQ(d.span.col, 11u);  // code points: 2 spaces, "Real ", "été", then the bad byte
}

// Random insertions, deletions and replacements of bytes and tokens in valid models: whatever
// comes out, the parser must end with a result or with errors whose locations are in the file.
TEST(Robustness, MutationFuzz) {
  const std::string seeds[] = {
      kPendulum,
      R"(within L;
package P "p"
  import A.B.*;
  type T = Real(unit = "m");
  model N
    extends Base(k = 2);
    parameter Real A[2, 2] = [1, 2; 3, 4];
    Real v[3](each start = 0), w;
  protected
    Integer n = size(A, 1);
  equation
    for i in 1:3 loop
      v[i] = if i > 1 then A[1, end] else -w^2;
    end for;
    if time > 0.5 and not false then
      w = {1, 2, 3} * v;
    elseif w < 0 then
      connect(a.b, c[1].d);
    else
      w = "s" + 1e-3;
    end if;
  end N;
end P;
)",
  };
  const std::string snippets[] = {"(",
                                  ")",
                                  "[",
                                  "]",
                                  "{",
                                  "}",
                                  ";",
                                  ",",
                                  "=",
                                  "end",
                                  "model",
                                  "if",
                                  "then",
                                  "for",
                                  "loop",
                                  "\"",
                                  "/*",
                                  "//",
                                  "\n",
                                  "^",
                                  "-",
                                  "not",
                                  "end for;",
                                  "end if;",
                                  ":",
                                  ".",
                                  "\xFF",
                                  "\xC3",
                                  std::string(1, '\0'),
                                  "\t",
                                  "when",
                                  "annotation("};
  std::mt19937 rng(20240601);
  int parsed = 0, rejected = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    std::string text = seeds[rng() % 2];
    int edits = 1 + static_cast<int>(rng() % 6);
    for (int e = 0; e < edits; ++e) {
      size_t pos = text.empty() ? 0 : rng() % text.size();
      switch (rng() % 5) {
        case 0:  // insert a random byte
          text.insert(pos, 1, static_cast<char>(rng() & 0xFF));
          break;
        case 1:  // delete a range
          text.erase(pos, 1 + rng() % 8);
          break;
        case 2:  // replace a byte
          if (!text.empty()) text[pos] = static_cast<char>(rng() & 0xFF);
          break;
        case 3:  // insert a token
          text.insert(pos, snippets[rng() % (sizeof(snippets) / sizeof(snippets[0]))]);
          break;
        default: {  // duplicate a chunk
          size_t len = rng() % 40;
          text.insert(pos, text.substr(pos, len));
          break;
        }
      }
    }
    auto p = parse(text, "fuzz.mbs");
    std::string rendered = p->errors();
    if (p->file != nullptr) {
      ++parsed;
      EXPECT_FALSE(p->diags.has_errors()) << text;
      ast_text(*p->file);
    } else {
      ++rejected;
      ASSERT_TRUE(p->diags.has_errors()) << "nullptr without an error for:\n" << text;
      for (const Diagnostic& d : p->diags.diagnostics()) {
        if (!d.span.valid()) continue;
        EXPECT_EQ(d.span.file, p->id);
        EXPECT_LE(d.span.line, p->sources.line_count(p->id)) << rendered;
        EXPECT_GE(d.span.col, 1u);
      }
    }
  }
  // The mutations must exercise both outcomes.
  EXPECT_GT(parsed, 50);
  EXPECT_GT(rejected, 1000);
}

}  // namespace
}  // namespace mbs
