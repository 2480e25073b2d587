// Modularity (docs/language.md, "Conditional components" and the sections after it): conditional
// components, checked against decays derived by hand.
#include <cmath>

#include "lang_test_util.h"

namespace mbs {
namespace {

using langtest::compile_error;
using langtest::compile_source;
using langtest::last;
using langtest::run;

// A mass on a rail with a damper that exists only when `damped`: m v' = -d v when
// the damper is there (v = exp(-d t / m)), v' = 0 when it is not (its connect is removed with it
// and the free flange's force is zero).
std::string damper_model(bool damped) {
  return std::string(R"mbs(
connector Flange
  Real s;
  flow Real f;
end Flange;

model Mass
  parameter Real m = 2;
  Flange a;
  Real v(start = 1, fixed = true);
equation
  der(a.s) = v;
  m*der(v) = a.f;
end Mass;

model Damper
  parameter Real d = 1;
  Flange a;
equation
  a.f = d*der(a.s);
end Damper;

model Rail
  parameter Boolean damped = )mbs") +
         (damped ? "true" : "false") + R"mbs(;
  Mass mass(a.s(start = 0, fixed = true));
  Damper damper(d = 4) if damped;
equation
  connect(mass.a, damper.a);
end Rail;
)mbs";
}

TEST(Modularity, ConditionalDamperOnGivesTheDampedDecay) {
  auto m = compile_source("cond_on", damper_model(true));
  ASSERT_TRUE(m);
  auto r = run(*m, 1.0, 1e-3, rt::SolverKind::Dopri5);
  EXPECT_NEAR(last(*m, r, "mass.v"), std::exp(-4.0 / 2.0 * 1.0), 1e-6);
}

TEST(Modularity, ConditionalDamperOffIsRemovedWithItsConnection) {
  auto m = compile_source("cond_off", damper_model(false));
  ASSERT_TRUE(m);
  for (const auto& n : m->output_names) EXPECT_EQ(n.rfind("damper", 0), std::string::npos) << n;
  auto r = run(*m, 1.0, 1e-3, rt::SolverKind::Dopri5);
  EXPECT_NEAR(last(*m, r, "mass.v"), 1.0, 1e-9);
  EXPECT_NEAR(last(*m, r, "mass.a.s"), 1.0, 1e-9);
}

// The condition may name a parameter declared after the component and set by a modifier from
// outside.
TEST(Modularity, ConditionFromAnOuterModifier) {
  auto m = compile_source("cond_mod", R"mbs(
model Decay
  parameter Real k = 1;
  Real x(start = 1, fixed = true);
equation
  der(x) = -k*x;
end Decay;

model Pair
  Decay a(k = 2) if useA;
  Decay b(k = 3) if not useA;
  parameter Boolean useA = true;
end Pair;

model Top
  Pair p(useA = false);
end Top;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 1.0, 1e-3, rt::SolverKind::Dopri5);
  EXPECT_NEAR(last(*m, r, "p.b.x"), std::exp(-3.0), 1e-6);
  for (const auto& n : m->output_names) EXPECT_EQ(n.rfind("p.a.", 0), std::string::npos) << n;
}

TEST(Modularity, ConditionMustBeABooleanParameterExpression) {
  const std::string base = R"mbs(
model D
  Real x(start = 1, fixed = true);
equation
  der(x) = -x;
end D;
)mbs";
  std::string e = compile_error("cond_real", base + R"mbs(
model M
  parameter Real p = 1;
  D d if p;
end M;
)mbs");
  EXPECT_NE(e.find("must be a Boolean scalar, found a Real"), std::string::npos) << e;
  e = compile_error("cond_var", base + R"mbs(
model M
  Real y = time;
  D d if y > 0.5;
end M;
)mbs");
  EXPECT_NE(
      e.find(
          "the condition of the conditional component 'd' (it depends on 'y') must be a parameter"),
      std::string::npos)
      << e;
}

// ---- replaceable and redeclare (docs/language.md, "Replaceable components and redeclare")

const char* kDecays = R"mbs(
model Decay
  parameter Real k = 1;
  Real x(start = 1, fixed = true);
equation
  der(x) = -k*x;
end Decay;

model FastDecay "twice the rate of a Decay of the same k"
  parameter Real k = 1;
  Real x(start = 1, fixed = true);
equation
  der(x) = -2*k*x;
end FastDecay;

model Holder
  replaceable Decay d(k = 3) constrainedby Decay;
end Holder;
)mbs";

// `redeclare FastDecay d` in a component's modifier: the new type with the kept modifier k = 3
// (section 7.3.1) gives x = exp(-2*3*t) instead of the declared type's exp(-3 t).
TEST(Modularity, RedeclareInAModifierChangesTheSolution) {
  auto m = compile_source("redecl_mod", std::string(kDecays) + R"mbs(
model Top
  Holder h(redeclare FastDecay d);
end Top;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 1.0, 1e-3, rt::SolverKind::Dopri5);
  EXPECT_NEAR(last(*m, r, "h.d.x"), std::exp(-6.0), 1e-7);
}

// In an extends modifier, with modifiers of its own; and as an element `redeclare A a;` of a
// class that inherits the replaceable one.
TEST(Modularity, RedeclareInExtendsAndAsAnElement) {
  auto m = compile_source("redecl_ext", std::string(kDecays) + R"mbs(
model Top
  extends Holder(redeclare FastDecay d(x(start = 2)));
end Top;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 1.0, 1e-3, rt::SolverKind::Dopri5);
  EXPECT_NEAR(last(*m, r, "d.x"), 2.0 * std::exp(-6.0), 1e-7);
  m = compile_source("redecl_elem", std::string(kDecays) + R"mbs(
model Top
  extends Holder;
  redeclare FastDecay d(k = 0.5);
end Top;
)mbs");
  ASSERT_TRUE(m);
  r = run(*m, 1.0, 1e-3, rt::SolverKind::Dopri5);
  EXPECT_NEAR(last(*m, r, "d.x"), std::exp(-1.0), 1e-7);
}

// `redeclare each` in an array of components.
TEST(Modularity, RedeclareEachInAnArray) {
  auto m = compile_source("redecl_each", std::string(kDecays) + R"mbs(
model Top
  Holder h[2](redeclare each FastDecay d, d(k = {1, 2}));
end Top;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 1.0, 1e-3, rt::SolverKind::Dopri5);
  EXPECT_NEAR(last(*m, r, "h[1].d.x"), std::exp(-2.0), 1e-7);
  EXPECT_NEAR(last(*m, r, "h[2].d.x"), std::exp(-4.0), 1e-7);
}

// ---- inner and outer (docs/language.md, "inner and outer")

// A conditional outer component (present here) is the inner's instance, not a conditional
// component of Top: Top's own use of its inner stays legal, and v' = -g = -1 gives v(1) = -1.
TEST(Modularity, AConditionalOuterLeavesTheInnerAlone) {
  auto m = compile_source("outer_conditional", R"mbs(
model W
  parameter Real g = 9.81;
end W;
model P
  parameter Boolean on = true;
  outer W w if on;
end P;
model Top
  inner W w(g = 1);
  P p;
  Real v(start = 0, fixed = true);
equation
  der(v) = -w.g;
end Top;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 1.0, 0.1);
  EXPECT_NEAR(last(*m, r, "v"), -1.0, 1e-9);
}

// An outer component reads the parameter of the nearest enclosing inner one: v' = -g with the
// inner's g; `inner outer` is the outer one for its own class and the inner one below it.
TEST(Modularity, OuterReadsTheNearestInner) {
  auto m = compile_source("inner_outer", R"mbs(
model W
  parameter Real g = 9.81;
end W;

model P
  outer W w;
  Real v(start = 0, fixed = true);
equation
  der(v) = -w.g;
end P;

model Sub
  inner outer W w(g = 2);
  P p;
  Real gOut = w.g;
end Sub;

model G
  P p;
  Sub s;
  inner W w(g = 1);
end G;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 1.0, 1e-3, rt::SolverKind::Dopri5);
  EXPECT_NEAR(last(*m, r, "p.v"), -1.0, 1e-9);
  EXPECT_NEAR(last(*m, r, "s.p.v"), -2.0, 1e-9);
  EXPECT_NEAR(last(*m, r, "s.gOut"), 1.0, 1e-12);
}

// The standard library's World declared inner, used by an outer one inside a component: a
// pendulum released horizontally under the inner's gravity g = 2 keeps its energy
// J w^2 / 2 + m g y = 0, with y = d sin(phi) and J = Izz + m d^2.
TEST(Modularity, InnerWorldOfTheStandardLibrary) {
  auto m = compile_source("inner_world", R"mbs(
model Arm
  import Mechanics.*;
  outer World world;
  Revolute j(n = {0, 0, 1});
  Body b(m = 1, r_cm = {0.5, 0, 0}, I = diag({1e-3, 1e-3, 1e-3}));
equation
  connect(world.frame, j.frame_a);
  connect(j.frame_b, b.frame_a);
end Arm;

model Top
  inner Mechanics.World world(g = {0, -2, 0});
  Arm arm;
end Top;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 0.5, 1e-4, rt::SolverKind::GenAlpha);
  const double phi = last(*m, r, "arm.j.phi"), w = last(*m, r, "arm.j.w");
  const double J = 1e-3 + 0.25;
  EXPECT_LT(phi, -0.3);  // it has fallen
  EXPECT_NEAR(0.5 * J * w * w + 1.0 * 2.0 * 0.5 * std::sin(phi), 0.0, 1e-4);
}

// ---- import (docs/language.md, "Packages, import and the library path"): the four forms

TEST(Modularity, ImportInAllItsForms) {
  const std::string pkg = R"mbs(
package A
  package B
    model C
      parameter Real k = 1;
      Real x(start = 1, fixed = true);
    equation
      der(x) = -k*x;
    end C;
    model D
      Real y = 3;
    end D;
  end B;
end A;
)mbs";
  const char* bodies[] = {
      "  import A.B;\n  B.C c;\n  B.D d;\n", "  import A.B.*;\n  C c;\n  D d;\n",
      "  import X = A.B;\n  X.C c;\n  X.D d;\n", "  import A.B.{C, D};\n  C c;\n  D d;\n"};
  int i = 0;
  for (const char* body : bodies) {
    auto m = compile_source("import" + std::to_string(i++), pkg + "model T\n" + body + "end T;\n");
    ASSERT_TRUE(m) << body;
    auto r = run(*m, 1.0, 1e-3, rt::SolverKind::Dopri5);
    EXPECT_NEAR(last(*m, r, "c.x"), std::exp(-1.0), 1e-7) << body;
    EXPECT_EQ(last(*m, r, "d.y"), 3.0) << body;
  }
}

}  // namespace
}  // namespace mbs
