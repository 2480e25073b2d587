// The compiler's symbolic work grows linearly with a model's size: the expression nodes created
// up to each pass (PassTiming::nodes, deterministic, unlike time) at size n and 2n. A pass that
// turns superlinear again fails here (issue 14: a chain of first-order equations
// der(x[i]) = x[i-1] - x[i] once took 2.1 s in the DAE pass at n = 160, substituting each
// variable by derivatives of the next until one equation of order n remained; the condensed
// form of an N-link chain once differentiated every balance row once per joint coordinate in
// the explicit elimination, 1.3 s at N = 40).
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "compiler/driver/Compile.h"

namespace mbs {
namespace {

std::map<std::string, size_t> nodes_per_pass(const CompileOptions& o) {
  std::ostringstream emit, diag;
  CompileResult r = compile(o, emit, diag);
  EXPECT_TRUE(r.ok) << diag.str();
  std::map<std::string, size_t> nodes;
  for (const PassTiming& t : r.timings) nodes[t.pass] = t.nodes;
  return nodes;
}

std::map<std::string, size_t> nodes_per_pass(const std::string& text) {
  CompileOptions o;
  o.file = "scaling.mbs";
  o.source = text;
  o.cache_dir = "off";
  o.opt_level = 0;
  return nodes_per_pass(o);
}

// The condensed form (every kinematic quantity substituted, M(q) q'' + h = Q) of the N-link
// chain of examples/mechanics/chain.mbs, up to the kernels.
std::map<std::string, size_t> condensed_chain(int n) {
  CompileOptions o;
  o.file = MBS_SOURCE_DIR "/examples/mechanics/chain.mbs";
  o.overrides["N"] = n;
  o.recursive_depth = 1000;
  o.cache_dir = "off";
  o.codegen = false;
  return nodes_per_pass(o);
}

double growth(std::map<std::string, size_t>& a, std::map<std::string, size_t>& b,
              const char* pass) {
  EXPECT_TRUE(a.count(pass) && b.count(pass)) << pass;
  EXPECT_GT(a[pass], 0u) << pass;
  return a[pass] > 0 ? static_cast<double>(b[pass]) / static_cast<double>(a[pass]) : 0.0;
}

// The ratio of the nodes after each symbolic pass at 2n to those at n stays below `limit`
// (linear growth gives about 2).
void expect_linear(const std::string& small, const std::string& large, double limit) {
  auto a = nodes_per_pass(small), b = nodes_per_pass(large);
  for (const char* pass : {"flatten", "dae", "kernels"}) {
    ASSERT_TRUE(a.count(pass) && b.count(pass)) << pass;
    ASSERT_GT(a[pass], 0u) << pass;
    const double ratio = static_cast<double>(b[pass]) / static_cast<double>(a[pass]);
    EXPECT_LT(ratio, limit) << pass << ": " << a[pass] << " -> " << b[pass] << " nodes";
    EXPECT_GT(ratio, 1.2) << pass << ": the measure does not see the model's size";
  }
}

std::string ode_chain(int n) {
  return "model OdeChain\n  parameter Integer n = " + std::to_string(n) +
         ";\n  Real x[n](each start = 1);\nequation\n  der(x[1]) = -x[1];\n"
         "  for i in 2:n loop\n    der(x[i]) = x[i-1] - x[i];\n  end for;\nend OdeChain;\n";
}

std::string oscillator_array(int n) {
  return "model Oscillators\n  parameter Integer n = " + std::to_string(n) +
         ";\n  parameter Real k = 4;\n  Real x[n](each start = 1), v[n], f[n];\nequation\n"
         "  for i in 1:n loop\n    v[i] = der(x[i]);\n    f[i] = -k*x[i] - 0.1*v[i] + "
         "sin(i*time);\n    der(v[i]) = f[i];\n  end for;\nend Oscillators;\n";
}

TEST(Scaling, FirstOrderChainIsLinear) {
  expect_linear(ode_chain(100), ode_chain(200), 2.5);
}

TEST(Scaling, ArrayOfOscillatorsIsLinear) {
  expect_linear(oscillator_array(200), oscillator_array(400), 2.5);
}

// The condensed chain's rows each contain every joint coordinate, so its Jacobians are dense
// (N^2 entries of M(q)); everything up to the DAE is still linear: the mechanics lowering
// shares the kinematics between the rows, and the DAE pass creates no nodes of its own (it
// created 2.3 times the model's nodes at N = 10 and 6.5 times at N = 40, growing x3.5 per
// doubling, when the explicit elimination differentiated each row by each coordinate).
TEST(Scaling, CondensedChainIsLinearUpToTheDae) {
  auto a = condensed_chain(10), b = condensed_chain(20);
  for (const char* pass : {"flatten", "mech", "dae"}) {
    const double ratio = growth(a, b, pass);
    EXPECT_LT(ratio, 2.3) << pass << ": " << a[pass] << " -> " << b[pass] << " nodes";
    EXPECT_GT(ratio, 1.5) << pass << ": the measure does not see the model's size";
  }
  EXPECT_LT(static_cast<double>(a["dae"]), 1.2 * static_cast<double>(a["mech"]))
      << "the DAE pass of the condensed chain creates " << a["dae"] - a["mech"] << " nodes";
}

}  // namespace
}  // namespace mbs
