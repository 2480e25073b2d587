// The compiler's symbolic work grows linearly with a model's size: the expression nodes created
// up to each pass (PassTiming::nodes, deterministic, unlike time) at size n and 2n. A pass that
// turns superlinear again fails here (issue 14: a chain of first-order equations
// der(x[i]) = x[i-1] - x[i] once took 2.1 s in the DAE pass at n = 160, substituting each
// variable by derivatives of the next until one equation of order n remained).
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "compiler/driver/Compile.h"

namespace mbs {
namespace {

std::map<std::string, size_t> nodes_per_pass(const std::string& text) {
  CompileOptions o;
  o.file = "scaling.mbs";
  o.source = text;
  o.cache_dir = "off";
  o.opt_level = 0;
  std::ostringstream emit, diag;
  CompileResult r = compile(o, emit, diag);
  EXPECT_TRUE(r.ok) << diag.str();
  std::map<std::string, size_t> nodes;
  for (const PassTiming& t : r.timings) nodes[t.pass] = t.nodes;
  return nodes;
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

// The value of a modifier of an array, `start = {i for i in 1:n}`, is evaluated once, not once
// per element (which made it O(n^2): 1.1 s of flattening at n = 1600). The work is bounded by
// the iterations of comprehensions (10 max_instances): with max_instances = 1000, n = 400 needs
// 400 of the 10,000 iterations allowed, the old evaluation per element 160,000.
TEST(Scaling, ArrayModifierIsEvaluatedOnce) {
  const int n = 400;
  CompileOptions o;
  o.file = "modifier.mbs";
  o.source = "model Ramp\n  parameter Integer n = " + std::to_string(n) +
             ";\n  Real x[n](start = {0.5 * i for i in 1:n}, each fixed = true);\n"
             "  parameter Real c[n] = {i * i for i in 1:n};\nequation\n"
             "  for i in 1:n loop\n    der(x[i]) = -c[i] * x[i];\n  end for;\nend Ramp;\n";
  o.cache_dir = "off";
  o.opt_level = 0;
  o.max_instances = 1000;
  std::ostringstream emit, diag;
  CompileResult r = compile(o, emit, diag);
  ASSERT_TRUE(r.ok) << diag.str();
  // each element has its own start value
  ASSERT_EQ(r.model->n_y, n);
  for (int32_t j = 0; j < r.model->n_y; ++j) {
    const double start = r.model->v0[static_cast<size_t>(r.model->y_slot[j])];
    const std::string& name = r.model->y[j].name;
    const int i = std::stoi(name.substr(2, name.size() - 3));
    EXPECT_EQ(start, 0.5 * i) << name;
  }
}

}  // namespace
}  // namespace mbs
