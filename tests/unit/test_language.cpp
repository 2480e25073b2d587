// The Modelica language as docs/language.md describes it, chapter by chapter: small valid models
// whose flattened or simulated values are checked against values derived by hand. One test
// program: this file and tests/unit/language/*.cpp (one file per chapter), so that a new chapter
// costs no new executable to link.
#include <cmath>

#include "language/lang_test_util.h"

namespace mbs {
namespace {

using langtest::compile_source;
using langtest::last;
using langtest::run;

// The smallest check of the harness itself: x' = -x from 1 reaches exp(-1) at t = 1.
TEST(Language, TheHarnessSimulatesADecay) {
  auto m = compile_source("decay", R"mbs(
model Decay
  Real x(start = 1, fixed = true);
equation
  der(x) = -x;
end Decay;
)mbs");
  ASSERT_TRUE(m);
  auto r = run(*m, 1.0, 1e-3, rt::SolverKind::Dopri5);
  EXPECT_NEAR(last(*m, r, "x"), std::exp(-1.0), 1e-6);
}

}  // namespace
}  // namespace mbs
