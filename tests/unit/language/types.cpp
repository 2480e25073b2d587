// docs/language.md, "Types": the keyword `class`, quoted identifiers, global names, array sizes
// taken from a binding, and discrete Integer variables. Every expected value is worked out by hand
// from the model's text.
#include <cmath>

#include "lang_test_util.h"

namespace mbs {
namespace {

using langtest::compile_source;
using langtest::last;
using langtest::run;

// x' = -x from 1: x(1) = exp(-1); z = c*x with the package constant c = 2 named globally, and the
// nested class's y = c. The quoted identifier is a result column with its quotes.
TEST(LanguageTypes, ClassQuotedIdentifiersAndGlobalNames) {
  auto m = compile_source("types_class", R"mbs(
package P
  constant Real c = 2;
  class Inner
    Real y;
  equation
    y = .P.c;
  end Inner;
end P;

class A "a general class"
  Real 'quoted x'(start = 1, fixed = true);
  .P.Inner inner1;
  Real z = .P.c*'quoted x';
equation
  der('quoted x') = -'quoted x';
end A;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 1.0, 1e-3, rt::SolverKind::Dopri5);
  EXPECT_NEAR(last(*m, r, "'quoted x'"), std::exp(-1.0), 1e-6);
  EXPECT_NEAR(last(*m, r, "z"), 2.0 * std::exp(-1.0), 1e-6);
  EXPECT_DOUBLE_EQ(last(*m, r, "inner1.y"), 2.0);
}

// Sizes from the bindings: p = {1, 2, 3}, k = {4, 5}, a(1) = {1, 2, 3}: s = 6 + 9 + 6 = 21.
TEST(LanguageTypes, ArraySizeFromTheBinding) {
  auto m = compile_source("types_colon", R"mbs(
model Colon
  parameter Real p[:] = {1, 2, 3};
  constant Integer k[:] = {4, 5};
  Real a[:] = {time, 2*time, 3};
  Real s = sum(p) + sum(k) + sum(a) + size(a, 1) - 3;
end Colon;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 1.0, 0.1);
  EXPECT_NEAR(last(*m, r, "s"), 21.0, 1e-12);
  EXPECT_NEAR(last(*m, r, "a[3]"), 3.0, 1e-12);
}

// sample(0.1, 0.25) fires at 0.1, 0.35, 0.6 and 0.85 before t = 1: the Integer counts 4.
TEST(LanguageTypes, AnIntegerCountedByAWhenEquation) {
  auto m = compile_source("types_count", R"mbs(
model Count
  discrete Integer n(start = 0);
  Real x(start = 0, fixed = true);
equation
  der(x) = 1;
  when sample(0.1, 0.25) then
    n = pre(n) + 1;
  end when;
end Count;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 1.0, 1e-2);
  EXPECT_DOUBLE_EQ(last(*m, r, "n"), 4.0);
}

// Integer -> Real is the one implicit conversion: an Integer binding of a Real, an Integer
// argument of a Real function, and Integer results of sign, abs and min of Integers.
TEST(LanguageTypes, IntegerConvertsToReal) {
  auto m = compile_source("types_convert", R"mbs(
model Convert
  parameter Integer n = 3;
  parameter Integer m = min(n, 2) + abs(-4) + sign(-2.5);
  Real x = n;
  Real y = sqrt(n + 1) + m;
end Convert;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 0.1, 0.1);
  EXPECT_DOUBLE_EQ(last(*m, r, "x"), 3.0);
  EXPECT_DOUBLE_EQ(last(*m, r, "y"), 2.0 + (2 + 4 - 1));
}

// An enumeration parameter selects a branch: c = green gives k = 2, so x(1) = 2; g = high > mid
// gives kg = 10; Integer over all three literals sums to 6 and over green:blue to 5; the
// discrete state becomes blue (3) when x passes 1 (t = 0.5).
TEST(LanguageTypes, EnumerationsSelectBranchesAndCount) {
  auto m = compile_source("types_enum", R"mbs(
package Modes
  type Gear = enumeration(low "slow", mid, high "fast");
end Modes;

model Enum
  type Color = enumeration(red, green, blue);
  parameter Color c = Color.green;
  parameter Modes.Gear g(min = Modes.Gear.low, max = Modes.Gear.high) = Modes.Gear.high;
  constant Color top = max(Color.red, Color.blue);
  discrete Color state(start = Color.red);
  Real x(start = 0, fixed = true);
  Real k = if c == Color.green then 2 else 5;
  Real kg = if g > Modes.Gear.mid then 10 else 20;
  Real n = sum(Integer(e) for e in Color) + Integer(top);
  Real r = sum(Integer(e) for e in Color.green:Color.blue);
equation
  der(x) = k;
  when x > 1 then
    state = Color.blue;
  end when;
end Enum;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 1.0, 1e-3);
  EXPECT_NEAR(last(*m, r, "x"), 2.0, 1e-9);
  EXPECT_DOUBLE_EQ(last(*m, r, "kg"), 10.0);
  EXPECT_DOUBLE_EQ(last(*m, r, "n"), 6.0 + 3.0);
  EXPECT_DOUBLE_EQ(last(*m, r, "r"), 5.0);
  EXPECT_DOUBLE_EQ(last(*m, r, "state"), 3.0);
}

// String parameters and constants, `+` and String(...) with its options, seen through the unit
// attribute they give (the one place a compile-time text reaches the compiled model):
// String(2.5) = "2.5", String(42, minimumLength = 4, leftJustified = false) = "  42",
// String(1/3, significantDigits = 3) = "0.333", String(2.5, format = "8.3f") = "   2.500".
TEST(LanguageTypes, StringParametersAndFormatting) {
  auto m = compile_source("types_string", R"mbs(
connector Pin "a String parameter in a connector: no equation"
  parameter String tag = "pin";
  Real u;
end Pin;

model S
  type Mode = enumeration(slow, fast);
  parameter String base = "m";
  constant String per = "/" + "s";
  parameter Real k = 2.5;
  parameter Integer n = 42;
  parameter String label = "k=" + String(k) + " n=" + String(n, minimumLength = 4,
    leftJustified = false) + " " + String(true) + " " + String(Mode.fast) + " " +
    String(1/3, significantDigits = 3) + "|" + String(k, format = "8.3f") + "|";
  Real v(unit = base + per) = time;
  Real w(unit = label) = time;
  Pin a(tag = "a"), b;
equation
  connect(a, b);
  a.u = 2*time;
end S;
)mbs");
  ASSERT_TRUE(m);
  auto unit = [&](const std::string& name) {
    return m->output_unit[static_cast<size_t>(langtest::output_column(*m, name))];
  };
  EXPECT_EQ(unit("v"), "m/s");
  EXPECT_EQ(unit("w"), "k=2.5 n=  42 true fast 0.333|   2.500|");
  auto r = run(*m, 1.0, 0.5);
  EXPECT_NEAR(last(*m, r, "b.u"), 2.0, 1e-12);  // b.u = a.u by the connection
}

// Short class definitions: an attribute type, array types (Vec3 = Real[3], Mat = Vec3[2]) and an
// array of an array type; s = 6 + 21 + 9 + 2 = 38, p = 1 + t with its start from the type.
TEST(LanguageTypes, ShortClassDefinitionsWithArrayTypes) {
  auto m = compile_source("types_short", R"mbs(
model Short
  type Length = Real(unit = "m", min = 0);
  type Vec3 = Real[3];
  type Mat = Vec3[2];
  type Position = Length[3](each start = 1);
  Length L = 2;
  Vec3 v = {1, 2, 3};
  Mat M = {{1, 2, 3}, {4, 5, 6}};
  Vec3 w[2] = {{1, 1, 1}, {2, 2, 2}};
  Position p(each fixed = true);
  Real s = sum(v) + sum(M) + sum(w) + L;
equation
  der(p) = {1, 1, 1};
end Short;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 1.0, 1e-2);
  EXPECT_NEAR(last(*m, r, "s"), 38.0, 1e-12);
  EXPECT_NEAR(last(*m, r, "M[2,3]"), 6.0, 1e-12);
  EXPECT_NEAR(last(*m, r, "p[3]"), 2.0, 1e-9);
  EXPECT_EQ(m->output_unit[static_cast<size_t>(langtest::output_column(*m, "p[1]"))], "m");
}

}  // namespace
}  // namespace mbs
