// docs/language.md, "Algorithms": algorithm sections of models (Modelica 3.6, chapter 11), each
// checked against the closed form of what the statements compute.
#include <cmath>

#include "lang_test_util.h"

namespace mbs {
namespace {

using langtest::compile_error;
using langtest::compile_source;
using langtest::last;
using langtest::run;

// x = t; the for loop sums i*x for i = 1..4, so y = 10 t; the if gives z = y - 1 above x = 0.5
// and -y below; the second loop leaves at i = 2, so w[3] keeps its start value 7.
TEST(Algorithms, AnIfAndAForGiveTheClosedForm) {
  auto m = compile_source("algo_closed_form", R"mbs(
model A
  parameter Integer n = 4;
  Real x(start = 0, fixed = true);
  Real y, z;
  Real w[3](each start = 7);
equation
  der(x) = 1;
algorithm
  y := 0;
  for i in 1:n loop
    y := y + i*x;
  end for;
  if x > 0.5 then
    z := y - 1;
  else
    z := -y;
  end if;
  for i in 1:3 loop
    w[i] := i;
    if i == 2 then
      break;
    end if;
  end for;
end A;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 0.75, 0.25);
  EXPECT_NEAR(last(*m, r, "y"), 7.5, 1e-12);
  EXPECT_NEAR(last(*m, r, "z"), 6.5, 1e-12);
  EXPECT_NEAR(last(*m, r, "w[1]"), 1.0, 0.0);
  EXPECT_NEAR(last(*m, r, "w[2]"), 2.0, 0.0);
  EXPECT_NEAR(last(*m, r, "w[3]"), 7.0, 0.0);
  // below x = 0.5 the else branch: z = -y = -10 x at x = 0.25
  auto r2 = run(*m, 0.25, 0.25);
  EXPECT_NEAR(last(*m, r2, "z"), -2.5, 1e-12);
}

// Statements run in order and read the values assigned before them; a variable assigned on one
// path only keeps its start value on the others; a while on a decided condition and a return
// under a varying condition: s = 1 + 2 + ... + 5 = 15, and q = 2x unless x > 1, where the
// section returns before q is assigned (q = its start, 3); the value of a continuous state
// computed from der(x) reads it like an equation.
TEST(Algorithms, OrderStartValuesWhileAndReturn) {
  auto m = compile_source("algo_order", R"mbs(
model B
  Real x(start = 0, fixed = true);
  Real s, k, q(start = 3), d;
equation
  der(x) = 2;
algorithm
  d := der(x) + 1;
  s := 0;
  k := 0;
  while k < 5 loop
    k := k + 1;
    s := s + k;
  end while;
  if x > 1 then
    return;
  end if;
  q := 2*x;
end B;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 0.25, 0.25);
  EXPECT_NEAR(last(*m, r, "s"), 15.0, 0.0);
  EXPECT_NEAR(last(*m, r, "k"), 5.0, 0.0);
  EXPECT_NEAR(last(*m, r, "q"), 1.0, 1e-12);  // x = 0.5
  EXPECT_NEAR(last(*m, r, "d"), 3.0, 1e-12);
  auto r2 = run(*m, 1.0, 0.25);  // x = 2 > 1: returned before q
  EXPECT_NEAR(last(*m, r2, "q"), 3.0, 1e-12);
}

// An algorithm in a block used as a component, reading its input from a connection-free
// modifier equation; and an initial algorithm that computes a start value from a parameter.
TEST(Algorithms, InBlocksAndInitialAlgorithms) {
  auto m = compile_source("algo_block", R"mbs(
block Square
  input Real u;
  output Real y;
algorithm
  y := u*u;
end Square;
model C
  parameter Real a = 3;
  Square sq;
  Real x(start = 0, fixed = false);
equation
  sq.u = time;
  der(x) = 0;
initial algorithm
  x := 2*a;
end C;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 0.5, 0.25);
  EXPECT_NEAR(last(*m, r, "sq.y"), 0.25, 1e-12);
  EXPECT_NEAR(last(*m, r, "x"), 6.0, 1e-9);
}

TEST(Algorithms, AVariableAssignedInTwoSectionsIsRefused) {
  const std::string err = compile_error("algo_twice", R"mbs(
model D
  Real x(start = 1, fixed = true), y;
equation
  der(x) = -x;
algorithm
  y := x;
algorithm
  y := 2*x;
end D;
)mbs");
  EXPECT_NE(err.find("'y' is computed by an algorithm section and by another one"),
            std::string::npos)
      << err;
}

// `for i loop` without a range takes 1:size(a, k) from the arrays the body indexes with i, in
// for-equations, in statements of models and in functions: x[i] = exp(-i t), y = 2x and
// s = sum(y); total({1, 2, 3, 4}) = 10.
TEST(Algorithms, ForLoopsWithoutARangeTakeItFromTheArrays) {
  auto m = compile_source("algo_implicit_range", R"mbs(
function total
  input Real c[:];
  output Real s = 0;
algorithm
  for i loop
    s := s + c[i];
  end for;
end total;
model R
  Real x[3](each start = 1, each fixed = true), y[3], s, t;
equation
  for i loop
    der(x[i]) = -i*x[i];
  end for;
  t = total({1, 2, 3, 4});
algorithm
  for i loop
    y[i] := 2*x[i];
  end for;
  s := 0;
  for i loop
    s := s + y[i];
  end for;
end R;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 0.5, 1e-3, rt::SolverKind::Dopri5);
  double sum = 0;
  for (int i = 1; i <= 3; ++i) {
    EXPECT_NEAR(last(*m, r, "x[" + std::to_string(i) + "]"), std::exp(-0.5 * i), 1e-6);
    EXPECT_NEAR(last(*m, r, "y[" + std::to_string(i) + "]"), 2 * std::exp(-0.5 * i), 2e-6);
    sum += 2 * std::exp(-0.5 * i);
  }
  EXPECT_NEAR(last(*m, r, "s"), sum, 1e-5);
  EXPECT_NEAR(last(*m, r, "t"), 10.0, 0.0);
}

TEST(Algorithms, ADeducedRangeMustAgreeWithEveryArray) {
  const std::string err = compile_error("algo_range_mismatch", R"mbs(
model R2
  Real a[3], b[4];
equation
  for i loop
    a[i] = b[i];
  end for;
  b = {1, 2, 3, 4};
end R2;
)mbs");
  EXPECT_NE(err.find("'b[i]' has size 4 there, 'a[i]' size 3"), std::string::npos) << err;
}

// break under a condition that varies, in a function: the index of the first element of
// {1, 2, 3} above x is 1 for x < 1, 2 for 1 <= x < 2, 3 for 2 <= x < 3; on parameters the loop
// is decided while compiling (the first of {1, 5, 7, 9} above 4 is the 2nd).
TEST(Algorithms, BreakUnderAVaryingConditionInAFunction) {
  auto m = compile_source("algo_break_function", R"mbs(
function firstAbove
  input Real c[:];
  input Real lim;
  output Integer k = 0;
algorithm
  for i loop
    if c[i] > lim then
      k := i;
      break;
    end if;
  end for;
end firstAbove;
model FB
  parameter Integer k1 = firstAbove({1, 5, 7, 9}, 4);
  Real x(start = 0, fixed = true), j, j1;
equation
  der(x) = 1;
  j = firstAbove({1, 2, 3}, x);
  j1 = k1;
end FB;
)mbs");
  ASSERT_TRUE(m);
  EXPECT_NEAR(last(*m, run(*m, 0.5, 0.25), "j"), 1.0, 0.0);
  EXPECT_NEAR(last(*m, run(*m, 1.5, 0.25), "j"), 2.0, 0.0);
  auto r = run(*m, 2.5, 0.25);
  EXPECT_NEAR(last(*m, r, "j"), 3.0, 0.0);
  EXPECT_NEAR(last(*m, r, "j1"), 2.0, 0.0);
}

// assert(condition, message, level) on parameters is decided while compiling, as an equation
// and as a statement (also in a function): true is dropped and the model runs; false is a model
// error with the message, AssertionLevel.warning a warning.
TEST(Algorithms, AssertOnParametersIsDecidedWhileCompiling) {
  auto m = compile_source("algo_assert_true", R"mbs(
function positive
  input Real a;
  output Real b;
algorithm
  assert(a > 0, "a must be positive");
  b := a;
end positive;
model E
  parameter Real m = 2;
  parameter Real k = positive(m);
  Real x(start = 1, fixed = true), y;
equation
  assert(m > 0, "the mass must be positive");
  der(x) = -k*x;
algorithm
  assert(m < 10, "the mass must be below 10", level = AssertionLevel.error);
  y := x;
end E;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 0.5, 1e-3, rt::SolverKind::Dopri5);
  EXPECT_NEAR(last(*m, r, "y"), std::exp(-1.0), 1e-6);
  const std::string err = compile_error("algo_assert_false", R"mbs(
model F
  parameter Real m = -2;
  Real x(start = 1, fixed = true);
equation
  assert(m > 0, "the mass must be positive");
  der(x) = -x;
end F;
)mbs");
  EXPECT_NE(err.find("error: assertion failed: the mass must be positive"), std::string::npos)
      << err;
}

}  // namespace
}  // namespace mbs
