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

}  // namespace
}  // namespace mbs
