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

}  // namespace
}  // namespace mbs
