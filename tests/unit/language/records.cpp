// Records (docs/language.md, "Records") and the lookup rules that decide what a name means
// (docs/language.md, "Lookup and access"): small valid models whose values are derived by hand.
#include <cmath>

#include "lang_test_util.h"

namespace mbs {
namespace {

using langtest::compile_source;
using langtest::last;
using langtest::run;

// An inherited equation's names are looked up where its class is defined: the `y` in A is the
// constant P.y = 1, not the B.y = 2 of the class that extends A (Modelica 3.6, section 5.6.1),
// so x = 1 + time and z = 2.
TEST(Lookup, AnInheritedNameIsLookedUpWhereItsClassIsDefined) {
  auto m = compile_source("lookup_inherited", R"mbs(
package P
  constant Real y = 1;
  model A
    Real x;
  equation
    x = y + time;
  end A;
end P;
model B
  extends P.A;
  Real y = 2;
  Real z = y;
end B;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 0.5, 0.05, rt::SolverKind::Dopri5);
  EXPECT_NEAR(last(*m, r, "x"), 1.5, 1e-12);
  EXPECT_NEAR(last(*m, r, "z"), 2.0, 1e-12);
}

// A protected parameter is set by an extends modifier and read by name in the derived class.
TEST(Lookup, AProtectedElementIsSetByExtendsAndReadByName) {
  auto m = compile_source("lookup_protected", R"mbs(
model Base
protected
  parameter Real k = 1;
public
  Real x;
equation
  x = k*time;
end Base;
model Derived
  extends Base(k = 3);
  Real y = 2*k;
end Derived;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 0.5, 0.05, rt::SolverKind::Dopri5);
  EXPECT_NEAR(last(*m, r, "x"), 1.5, 1e-12);
  EXPECT_NEAR(last(*m, r, "y"), 6.0, 1e-12);
}

// Record parameters from the constructor, named with a default (R(a = 3): b = 2) and
// positional (R(1, 5)), a nested record, a record input of a function, equations between records
// and with the constructor, a function that returns a record, and an array of records. Every
// value below follows from the declarations by hand; x' = -y x + q.b checks that the members are
// unknowns of the simulated system like any variable (y = 5, q.b = 2 t; solved below).
TEST(Records, ConstructorsBindingsEquationsAndFunctions) {
  auto m = compile_source("records_basic", R"mbs(
model T
  record R
    Real a;
    Real b = 2;
  end R;
  record R2
    Real a;
    Real b;
  end R2;
  record Outer
    R2 sub;
    Real c;
  end Outer;
  function mk
    input Real x;
    output R2 r;
  algorithm
    r := R2(x, 2*x);
  end mk;
  function total
    input R r;
    output Real y;
  algorithm
    y := r.a + r.b;
  end total;
  parameter R p = R(a = 3);
  parameter R p2 = R(1, 5);
  parameter Outer o = Outer(R2(1, 2), 3);
  R2 q;
  R2 r1, r2;
  R2 s = mk(time);
  R2 rs[2];
  Real y = p.a + p.b;
  Real z = total(p2) + o.sub.b + o.c;
  Real x(start = 1, fixed = true);
equation
  q = R2(time, 2*time);
  r2 = R2(1, time);
  r1 = r2;
  rs[1] = R2(1, 2);
  rs[2] = rs[1];
  der(x) = -y*x + q.b;
end T;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 0.5, 1e-3, rt::SolverKind::Dopri5);
  const double t = 0.5;
  EXPECT_NEAR(last(*m, r, "y"), 3.0 + 2.0, 1e-12);  // p.b = 2: the default of the constructor
  EXPECT_NEAR(last(*m, r, "z"), 1.0 + 5.0 + 2.0 + 3.0, 1e-12);  // p2 = R(1, 5), o.sub.b, o.c
  EXPECT_NEAR(last(*m, r, "q.a"), t, 1e-12);
  EXPECT_NEAR(last(*m, r, "q.b"), 2 * t, 1e-12);
  EXPECT_NEAR(last(*m, r, "r1.a"), 1.0, 1e-12);
  EXPECT_NEAR(last(*m, r, "r1.b"), t, 1e-12);
  EXPECT_NEAR(last(*m, r, "s.b"), 2 * t, 1e-12);
  EXPECT_NEAR(last(*m, r, "rs[2].b"), 2.0, 1e-12);
  // x' = -5 x + 2 t, x(0) = 1: x = (1 + 2/25) e^{-5t} + 2t/5 - 2/25
  EXPECT_NEAR(last(*m, r, "x"), (1 + 2.0 / 25) * std::exp(-5 * t) + 2 * t / 5 - 2.0 / 25, 1e-6);
}

// A record with the `flow` prefix in a connector: the prefix applies to its members, so the
// connected pair's members sum to zero (k.p.f = -s.p.f = (1, 2 t): x' = 1 + 2 t, x = t + t^2)
// and an unconnected connector's members are zero (o.y = 0 + 0 + 5).
TEST(Records, AFlowRecordInAConnectorSumsToZeroAndIsZeroWhenUnconnected) {
  auto m = compile_source("records_flow", R"mbs(
model C
  record F
    Real f1;
    Real f2;
  end F;
  connector P
    Real v;
    flow F f;
  end P;
  model Src
    P p;
  equation
    p.f = F(-1, -2*time);
    p.v = 1;
  end Src;
  model Snk
    P p;
    Real x(start = 0, fixed = true);
  equation
    der(x) = p.f.f1 + p.f.f2;
  end Snk;
  model Open
    P p;
    Real y;
  equation
    y = p.f.f1 + p.f.f2 + 5;
    p.v = 0;
  end Open;
  Src s;
  Snk k;
  Open o;
equation
  connect(s.p, k.p);
end C;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 0.5, 1e-3, rt::SolverKind::Dopri5);
  EXPECT_NEAR(last(*m, r, "k.x"), 0.5 + 0.25, 1e-9);
  EXPECT_NEAR(last(*m, r, "o.y"), 5.0, 1e-12);
}

}  // namespace
}  // namespace mbs
