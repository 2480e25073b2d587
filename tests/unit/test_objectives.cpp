// Objectives of a study (compiler/driver/Objectives, runtime/drivers/Objective): every reduction
// against closed forms on der(x) = -a*x, whose solution x = exp(-a t) makes every reduction
// over a uniform grid a geometric sum; fit against data written here, with the sum of squares
// computed independently; diagnostics in their exact rendering; add() does not allocate.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <new>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/diag/Diagnostics.h"
#include "compiler/driver/Compile.h"
#include "compiler/driver/Objectives.h"
#include "compiler/driver/Session.h"
#include "runtime/drivers/Objective.h"
#include "tests/unit/alloc_counter.h"

using mbs::testalloc::g_allocations;
using mbs::testalloc::g_counting;

namespace {

using mbs::rt::Objective;
using mbs::rt::ObjectiveAccumulator;
using mbs::rt::Reduction;

// x(t) = exp(-a t); v = der(x); p = {x, 2x}; s.w = x^2.
const char* kDecay = R"(
model Sub
  Real w;
end Sub;
model Decay
  parameter Real a = 2;
  Real x(start = 1);
  Real v;
  Real p[2];
  Sub s;
equation
  der(x) = -a*x;
  v = der(x);
  p[1] = x;
  p[2] = 2*x;
  s.w = x^2;
end Decay;
)";

constexpr double kA = 2.0;   // a
constexpr double kH = 0.01;  // output grid
constexpr int kN = 100;      // grid points 0..kN: t = 0 .. 1
constexpr double kT = kN * kH;

std::shared_ptr<const mbs::rt::CompiledModel> decay_model() {
  static std::shared_ptr<const mbs::rt::CompiledModel> model = [] {
    mbs::CompileOptions o;
    o.file = "decay.mbs";
    o.source = kDecay;
    std::ostringstream emit, diag;
    mbs::CompileResult r = mbs::compile(o, emit, diag);
    EXPECT_TRUE(r.ok) << diag.str();
    return r.model;
  }();
  return model;
}

// The output row of the exact solution at t, in the model's column order.
std::vector<double> exact_row(const mbs::rt::CompiledModel& m, double t) {
  const double x = std::exp(-kA * t);
  const std::map<std::string, double> value = {
      {"x", x}, {"v", -kA * x}, {"p[1]", x}, {"p[2]", 2 * x}, {"s.w", x * x}};
  std::vector<double> row;
  for (const std::string& name : m.output_names) {
    EXPECT_TRUE(value.count(name)) << name;
    row.push_back(value.count(name) ? value.at(name) : 0.0);
  }
  return row;
}

struct Compiled {
  mbs::ObjectivesResult result;
  std::string diagnostics;
};

Compiled compile(const std::vector<std::string>& texts, const std::string& data_dir = "") {
  Compiled c;
  std::ostringstream diag;
  c.result = mbs::compile_objectives(*decay_model(), texts, data_dir, diag);
  c.diagnostics = diag.str();
  return c;
}

// The values of the objectives over the exact solution on the grid t = k h, k = 0..kN.
std::vector<double> on_exact_grid(const std::vector<Objective>& objectives) {
  std::vector<ObjectiveAccumulator> acc;
  for (const Objective& o : objectives) acc.emplace_back(o);
  for (int k = 0; k <= kN; ++k) {
    const double t = k * kH;
    std::vector<double> row = exact_row(*decay_model(), t);
    for (auto& a : acc) EXPECT_TRUE(a.add(t, row));
  }
  std::vector<double> values;
  for (const auto& a : acc) values.push_back(a.value());
  return values;
}

// Closed forms over the grid: with r = exp(-a h), sum_k x_k = (1 - r^(N+1)) / (1 - r) and
// sum_k x_k^2 = (1 - r^(2(N+1))) / (1 - r^2); the trapezoidal rule is h (sum - (first + last)/2).
struct ClosedForms {
  double r = std::exp(-kA * kH);
  double s1 = (1 - std::pow(r, kN + 1)) / (1 - r);
  double s2 = (1 - std::pow(r, 2 * (kN + 1))) / (1 - r * r);
  double x_end = std::exp(-kA * kT);
  double points = kN + 1;
};

const std::vector<std::pair<std::string, double>>& reduction_cases() {
  static const ClosedForms c;
  static const std::vector<std::pair<std::string, double>> cases = {
      {"final(x)", c.x_end},
      {"max(x)", 1.0},
      {"min(x)", c.x_end},
      {"maxabs(x)", 1.0},
      {"max(-x)", -c.x_end},
      {"min(-x)", -1.0},
      {"maxabs(-x)", 1.0},
      {"mean(x)", c.s1 / c.points},
      {"integral(x)", kH * (c.s1 - (1 + c.x_end) / 2)},
      {"rms(x)", std::sqrt(c.s2 / c.points)},
      {"l2(x)", std::sqrt(c.s2)},
      // names of every kind, and the expression language
      {"integral(s.w)", kH * (c.s2 - (1 + c.x_end * c.x_end) / 2)},
      {"max(p[2])", 2.0},
      {"final(v)", -kA * c.x_end},
      {"mean(time)", kT / 2},
      {"integral(time)", kT * kT / 2},
      {"integral(2 * time ^ 2 - 1)", 2 * (kT * kT * kT / 3 + kH * kH * kT / 6) - kT},
      {"maxabs(v + 2 * x)", 0.0},
      {"rms(sqrt(abs(x)) * exp(2 * time / 2))", 1.0},
      {"l2(p[1] / x)", std::sqrt(c.points)},
      {"min(max(x, 0.5))", 0.5},
      {"max(min(x, 0.5))", 0.5},
      {"final(atan2(x, 1))", std::atan(c.x_end)},
      {"final(log(x) / (time + 1))", -kA / 2},
      {"mean(if time < 0.495 then 1 else 0)", 50.0 / c.points},
      {"final(cos(0) + sin(0) + tan(0) + sinh(0) + cosh(0) + tanh(0) + log10(10))", 3.0},
      {"max(sign(-x))", -1.0},
      {"mean(time >= 0.495 and time <= 0.705 or time == 0)", 22.0 / c.points},
  };
  return cases;
}

TEST(Objectives, EveryReductionAgainstItsClosedFormOnTheExactSolution) {
  const auto& cases = reduction_cases();
  std::vector<std::string> texts;
  for (const auto& [text, value] : cases) texts.push_back(text);
  Compiled c = compile(texts);
  ASSERT_TRUE(c.result.ok) << c.diagnostics;
  EXPECT_EQ(c.diagnostics, "");
  ASSERT_EQ(c.result.objectives.size(), cases.size());
  std::vector<double> values = on_exact_grid(c.result.objectives);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].first);
    EXPECT_EQ(c.result.objectives[i].text, cases[i].first);
    EXPECT_NEAR(values[i], cases[i].second, 1e-12 * (1 + std::fabs(cases[i].second)));
  }
  EXPECT_EQ(c.result.objectives[0].reduction, Reduction::Final);
  EXPECT_EQ(c.result.objectives[3].reduction, Reduction::MaxAbs);
  EXPECT_EQ(c.result.objectives[10].reduction, Reduction::L2);
}

// The same objectives fed by a simulation (rk4, h = 1e-3, output every 10th step): the closed
// forms hold to the integrator's accuracy.
TEST(Objectives, EveryReductionOverASimulatedRun) {
  const auto& cases = reduction_cases();
  std::vector<std::string> texts;
  for (const auto& [text, value] : cases) texts.push_back(text);
  mbs::CompileOptions o;
  o.file = "decay.mbs";
  o.source = kDecay;
  std::ostringstream diag, emit;
  mbs::Session session(o, diag);
  ASSERT_TRUE(session.compile(emit)) << diag.str();
  std::ostringstream odiag;
  auto compiled = mbs::compile_objectives(*session.model(), texts, "", odiag);
  ASSERT_TRUE(compiled.ok) << odiag.str();
  std::vector<ObjectiveAccumulator> acc;
  for (const Objective& obj : compiled.objectives) acc.emplace_back(obj);
  session.options().solver = mbs::rt::SolverKind::Rk4;
  session.options().h = 1e-3;
  session.options().t_end = kT;
  session.options().output_every = 10;
  int rows = 0;
  auto run = session.simulate([&](double t, std::span<const double> out) {
    ++rows;
    for (auto& a : acc) a.add(t, out);
    return 0;
  });
  ASSERT_EQ(run.status, mbs::rt::SolveStatus::Finished) << run.setup_error;
  ASSERT_EQ(rows, kN + 1);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].first);
    // a mean of a step function sees the grid times, which the run computes as k h
    EXPECT_NEAR(acc[i].value(), cases[i].second, 1e-9 * (1 + std::fabs(cases[i].second)));
  }
  // reset(): no rows again
  for (auto& a : acc) a.reset();
  EXPECT_TRUE(std::isnan(acc[0].value()));
}

TEST(Objectives, NoRowsGiveNaNAndANonFiniteValueMakesTheObjectiveNaN) {
  Compiled c = compile({"max(x)", "max(log(x - 0.5))", "integral(x)"});
  ASSERT_TRUE(c.result.ok) << c.diagnostics;
  ObjectiveAccumulator plain(c.result.objectives[0]);
  ObjectiveAccumulator broken(c.result.objectives[1]);
  EXPECT_TRUE(std::isnan(plain.value()));
  auto m = decay_model();
  EXPECT_TRUE(broken.add(0.0, exact_row(*m, 0.0)));
  EXPECT_NEAR(broken.value(), std::log(0.5), 1e-15);
  EXPECT_FALSE(broken.add(1.0, exact_row(*m, 1.0)));  // x = e^-2 < 0.5: log of a negative
  EXPECT_TRUE(std::isnan(broken.value()));
  broken.reset();
  EXPECT_TRUE(broken.add(0.0, exact_row(*m, 0.0)));
  EXPECT_FALSE(std::isnan(broken.value()));
  // one row: the integral is 0, the maximum that row's value
  ObjectiveAccumulator integral(c.result.objectives[2]);
  EXPECT_TRUE(integral.add(0.0, exact_row(*m, 0.0)));
  EXPECT_EQ(integral.value(), 0.0);
  EXPECT_TRUE(plain.add(0.3, exact_row(*m, 0.3)));
  EXPECT_EQ(plain.value(), std::exp(-kA * 0.3));
  // a row of the wrong size is a programming error
  EXPECT_THROW(plain.add(0.4, std::vector<double>{1.0}), std::invalid_argument);
}

struct TempDir {
  std::string path;
  explicit TempDir(const std::string& name)
      : path(testing::TempDir() + std::to_string(getpid()) + "_" + name) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  void write(const std::string& file, const std::string& text) const {
    std::ofstream(path + "/" + file, std::ios::binary) << text;
  }
};

TEST(Objectives, AddDoesNotAllocate) {
  TempDir dir("alloc");
  dir.write("data.csv", "time,x\n0.1,0.8\n0.5,0.4\n");
  Compiled c = compile({"integral(x)", "max(p[2])", "rms(s.w)", "fit(x, \"data.csv\")"}, dir.path);
  ASSERT_TRUE(c.result.ok) << c.diagnostics;
  std::vector<ObjectiveAccumulator> acc;
  for (const Objective& o : c.result.objectives) acc.emplace_back(o);
  std::vector<std::vector<double>> rows;
  for (int k = 0; k <= kN; ++k) rows.push_back(exact_row(*decay_model(), k * kH));
  g_allocations = 0;
  g_counting = true;
  for (int k = 0; k <= kN; ++k)
    for (auto& a : acc) a.add(k * kH, rows[static_cast<size_t>(k)]);
  double sum = 0;
  for (auto& a : acc) sum += a.value();
  g_counting = false;
  EXPECT_TRUE(std::isfinite(sum));
  EXPECT_EQ(g_allocations.load(), 0);
  // the counter counts
  g_counting = true;
  std::vector<double> v(5);
  g_counting = false;
  EXPECT_GT(g_allocations.load(), 0);
}

// ---- fit

// x interpolated linearly between the grid points t = k h of the exact solution.
double x_on_grid(double t) {
  int k = std::min(static_cast<int>(std::floor(t / kH)), kN - 1);
  const double t0 = k * kH, t1 = (k + 1) * kH;
  const double x0 = std::exp(-kA * t0), x1 = std::exp(-kA * t1);
  return x0 + (x1 - x0) * (t - t0) / (t1 - t0);
}

TEST(Objectives, FitIsTheSumOfSquaresAtTheDataTimes) {
  TempDir dir("fit");
  // times off the grid and on it, the first and last grid points included; columns in another
  // order than the model's, one of them named like an array element
  const std::vector<double> times = {0.0, 0.005, 0.2, 0.333, 0.5, 0.7071, 0.999, 1.0};
  std::ostringstream csv;
  csv << "time, y2, x, \"p[2]\"\r\n";
  std::vector<double> data_x, data_y2, data_p2;
  for (size_t j = 0; j < times.size(); ++j) {
    const double t = times[j];
    data_x.push_back(std::exp(-kA * t) + 0.01 * static_cast<double>(j % 3) - 0.005);
    data_y2.push_back(2 * std::exp(-kA * t) + 0.02 * std::sin(10.0 * t));
    data_p2.push_back(1.5 - t);
    csv << fmt::format("{:.17g},{:.17g}, {:.17g} ,{:.17g}\r\n", t, data_y2.back(), data_x.back(),
                       data_p2.back());
  }
  csv << "\r\n";  // a blank line at the end
  dir.write("measured.csv", csv.str());
  Compiled c = compile({"fit(x, \"measured.csv\")", "fit(2 * x, \"measured.csv\", \"y2\")",
                        "fit(p[2], \"measured.csv\")"},
                       dir.path);
  ASSERT_TRUE(c.result.ok) << c.diagnostics;
  double want_x = 0, want_y2 = 0, want_p2 = 0;
  for (size_t j = 0; j < times.size(); ++j) {
    const double x = x_on_grid(times[j]);
    want_x += (x - data_x[j]) * (x - data_x[j]);
    want_y2 += (2 * x - data_y2[j]) * (2 * x - data_y2[j]);
    want_p2 += (2 * x - data_p2[j]) * (2 * x - data_p2[j]);
  }
  std::vector<double> values = on_exact_grid(c.result.objectives);
  EXPECT_NEAR(values[0], want_x, 1e-14);
  EXPECT_NEAR(values[1], want_y2, 1e-14);
  EXPECT_NEAR(values[2], want_p2, 1e-13 * want_p2);
  EXPECT_GT(want_x, 1e-4);  // the data are not the solution: a wrong pairing would show
  const Objective& o = c.result.objectives[1];
  EXPECT_EQ(o.reduction, Reduction::Fit);
  EXPECT_EQ(o.data_file, dir.path + "/measured.csv");
  EXPECT_EQ(o.data_column, "y2");
  EXPECT_EQ(o.data_t, times);
  EXPECT_EQ(c.result.objectives[2].data_column, "p[2]");
}

TEST(Objectives, FitWithDataTimesOutsideTheRunIsNaN) {
  TempDir dir("fit_outside");
  dir.write("late.csv", "time,x\n0.5,0.3\n1.5,0.1\n");
  dir.write("early.csv", "time,x\n-0.1,1\n0.5,0.3\n");
  // 1 + 1e-12: within the rounding of the grid's end time, so still in the run
  dir.write("edge.csv", "time,x\n0.5,0.3\n1.000000000001,0.1\n");
  Compiled c =
      compile({"fit(x, \"late.csv\")", "fit(x, \"early.csv\")", "fit(x, \"edge.csv\")"}, dir.path);
  ASSERT_TRUE(c.result.ok) << c.diagnostics;
  std::vector<ObjectiveAccumulator> acc;
  for (const Objective& o : c.result.objectives) acc.emplace_back(o);
  auto m = decay_model();
  for (int k = 0; k <= kN; ++k)
    for (auto& a : acc) a.add(k * kH, exact_row(*m, k * kH));
  EXPECT_TRUE(std::isnan(acc[0].value()));
  EXPECT_TRUE(acc[0].data_outside());
  EXPECT_TRUE(std::isnan(acc[1].value()));
  EXPECT_TRUE(acc[1].data_outside());
  const double x5 = std::exp(-kA * 0.5), x1 = std::exp(-kA);
  EXPECT_FALSE(acc[2].data_outside());
  EXPECT_NEAR(acc[2].value(), (x5 - 0.3) * (x5 - 0.3) + (x1 - 0.1) * (x1 - 0.1), 1e-14);
  // a run that stops early does not cover the data either
  acc[2].reset();
  for (int k = 0; k <= kN / 2; ++k) acc[2].add(k * kH, exact_row(*m, k * kH));
  EXPECT_TRUE(acc[2].data_outside());
  EXPECT_TRUE(std::isnan(acc[2].value()));
}

// ---- diagnostics: the exact text

struct DiagCase {
  std::vector<std::string> texts;
  std::string expected;  // "@DIR@" stands for the data directory
};

const char* kGoodData = "time,x,v\n0,1,-2\n0.5,0.4,-0.8\n";

std::vector<DiagCase> diag_cases() {
  return {
      // unknown names
      {{"max(xx)"},
       "<objective 1>:1:5: error: 'xx' is not an output of the model\n"
       "  max(xx)\n"
       "      ^~\n"
       "help: did you mean 'x'?\n"},
      {{"max(x)", "integral(2 * b.frame_a.r[1] + s.ww)"},
       "<objective 2>:1:14: error: 'b.frame_a.r[1]' is not an output of the model\n"
       "  integral(2 * b.frame_a.r[1] + s.ww)\n"
       "               ^~~~~~~~~~~~~~\n"
       "<objective 2>:1:31: error: 's.ww' is not an output of the model\n"
       "  integral(2 * b.frame_a.r[1] + s.ww)\n"
       "                                ^~~~\n"
       "help: did you mean 's.w'?\n"},
      {{"mean(a * x)"},
       "<objective 1>:1:6: error: 'a' is not an output of the model\n"
       "  mean(a * x)\n"
       "       ^\n"
       "help: 'a' is a parameter: an objective reads the output columns of a run; write its "
       "value as a number\n"},
      {{"max(p)", "max(s)", "max(p[3])"},
       "<objective 1>:1:5: error: 'p' is not an output of the model\n"
       "  max(p)\n"
       "      ^\n"
       "help: 'p' has 2 outputs (p[1], p[2]): name one of them\n"
       "<objective 2>:1:5: error: 's' is not an output of the model\n"
       "  max(s)\n"
       "      ^\n"
       "help: 's' has 1 outputs (s.w): name one of them\n"
       "<objective 3>:1:5: error: 'p[3]' is not an output of the model\n"
       "  max(p[3])\n"
       "      ^~~~\n"
       "help: did you mean 'p[1]'?\n"},
      {{"final(der(x))"},
       "<objective 1>:1:7: error: 'der(x)' is not an output of the model\n"
       "  final(der(x))\n"
       "        ^~~~~~\n"
       "help: the results have no column 'der(x)'; declare a variable for it in the model (Real "
       "v; v = der(x);) and use that\n"},
      {{"max(p[i])"},
       "<objective 1>:1:7: error: a subscript in an objective must be a whole number from 1 on, "
       "as the result file's column names have\n"
       "  max(p[i])\n"
       "        ^\n"},
      // the form of an objective
      {{"x + 1"},
       "<objective 1>:1:1: error: an objective is a reduction of an expression, such as max(x) "
       "or integral(x^2)\n"
       "  x + 1\n"
       "  ^~~~~\n"
       "help: the reductions are final, max, min, maxabs, mean, integral, rms, l2 and "
       "fit(expression, \"data.csv\")\n"},
      {{"maximum(x)", "abs(x)", "peak(x)", "integal(x)"},
       "<objective 1>:1:1: error: unknown reduction 'maximum'\n"
       "  maximum(x)\n"
       "  ^~~~~~~\n"
       "help: did you mean 'max'?\n"
       "<objective 2>:1:1: error: unknown reduction 'abs'\n"
       "  abs(x)\n"
       "  ^~~\n"
       "help: 'abs' is a function of the expression; reduce it, e.g. max(abs(...))\n"
       "<objective 3>:1:1: error: unknown reduction 'peak'\n"
       "  peak(x)\n"
       "  ^~~~\n"
       "help: the reductions are final, max, min, maxabs, mean, integral, rms, l2 and "
       "fit(expression, \"data.csv\")\n"
       "<objective 4>:1:1: error: unknown reduction 'integal'\n"
       "  integal(x)\n"
       "  ^~~~~~~\n"
       "help: did you mean 'integral'?\n"},
      {{"max(x, v)", "mean(integral(x))", "max(sqr(x))", "final(sin(x, 2))", "max(max(x))"},
       "<objective 1>:1:1: error: the reduction 'max' takes one expression, 2 given\n"
       "  max(x, v)\n"
       "  ^~~~~~~~~\n"
       "help: max(a, b) of two expressions is pointwise: reduce it, as in max(max(a, b))\n"
       "<objective 2>:1:6: error: the reduction 'integral' can only be the outermost call of an "
       "objective\n"
       "  mean(integral(x))\n"
       "       ^~~~~~~~\n"
       "<objective 3>:1:5: error: unknown function 'sqr'\n"
       "  max(sqr(x))\n"
       "      ^~~\n"
       "help: did you mean 'sqrt'?\n"
       "<objective 4>:1:7: error: 'sin' takes 1 argument(s), 2 given\n"
       "  final(sin(x, 2))\n"
       "        ^~~~~~~~~\n"
       "<objective 5>:1:5: error: 'max' inside an objective's expression takes 2 arguments, 1 "
       "given\n"
       "  max(max(x))\n"
       "      ^~~~~~\n"
       "help: the reduction max(...) can only be the outermost call of an objective\n"},
      {{"max({x, v})", "mean(\"x\")"},
       "<objective 1>:1:5: error: an array in an objective is not supported\n"
       "  max({x, v})\n"
       "      ^~~~~~\n"
       "help: an objective reduces one number per output row; name one element, e.g. x[1]\n"
       "<objective 2>:1:6: error: a string is not a value: strings only name the data file and "
       "column of fit(expression, \"data.csv\", \"column\")\n"
       "  mean(\"x\")\n"
       "       ^~~\n"},
      // parse errors: the model grammar's messages
      {{"max(x", "max(x +)", "", "max(x) max(v)"},
       "<objective 1>:1:6: error: expected ',', 'for' or ')', found end of file\n"
       "  max(x\n"
       "       ^\n"
       "<objective 2>:1:8: error: expected an expression, found ')'\n"
       "  max(x +)\n"
       "         ^\n"
       "<objective 3>: error: expected an expression, found nothing\n"
       "<objective 4>:1:8: error: expected end of file, found 'max'\n"
       "  max(x) max(v)\n"
       "         ^~~\n"},
      // fit
      {{"fit(2 * x, \"good.csv\")", "fit(x, good.csv)", "fit(x)"},
       "<objective 1>:1:5: error: fit of an expression that is not a variable's name needs the "
       "data column\n"
       "  fit(2 * x, \"good.csv\")\n"
       "      ^~~~~\n"
       "help: name it: fit(expression, \"good.csv\", \"column\")\n"
       "<objective 2>:1:8: error: the data file of fit must be a string, such as \"data.csv\"\n"
       "  fit(x, good.csv)\n"
       "         ^~~~~~~~\n"
       "<objective 3>:1:1: error: fit takes an expression, a data file and optionally a column: "
       "fit(x, \"data.csv\") or fit(2*x, \"data.csv\", \"x2\"); 1 argument(s) given\n"
       "  fit(x)\n"
       "  ^~~~~~\n"},
      {{"fit(x, \"missing.csv\")", "fit(x, \"good.csv\", \"vv\")", "fit(p[1], \"good.csv\")"},
       "<objective 1>:1:8: error: cannot read the data file '@DIR@/missing.csv': No such file or "
       "directory\n"
       "  fit(x, \"missing.csv\")\n"
       "         ^~~~~~~~~~~~~\n"
       "<objective 2>:1:20: error: the data file '@DIR@/good.csv' has no column 'vv'\n"
       "  fit(x, \"good.csv\", \"vv\")\n"
       "                     ^~~~\n"
       "help: did you mean 'v'?\n"
       "@DIR@/good.csv:1:1: note: the columns of the data file (the first is time)\n"
       "  time,x,v\n"
       "  ^~~~~~~~\n"
       "<objective 3>:1:5: error: the data file '@DIR@/good.csv' has no column 'p[1]'\n"
       "  fit(p[1], \"good.csv\")\n"
       "      ^~~~\n"
       "@DIR@/good.csv:1:1: note: the columns of the data file (the first is time)\n"
       "  time,x,v\n"
       "  ^~~~~~~~\n"},
      {{"fit(x, \"backwards.csv\")", "fit(x, \"text.csv\")", "fit(x, \"short.csv\")",
        "fit(x, \"empty.csv\")", "fit(x, \"header_only.csv\")"},
       "@DIR@/backwards.csv:4:2: error: the times must increase: 0.25 follows 0.5\n"
       "   0.25, 0.4\n"
       "   ^~~~\n"
       "@DIR@/text.csv:3:5: error: 'high' is not a finite number\n"
       "  0.5,high\n"
       "      ^~~~\n"
       "@DIR@/short.csv:3:1: error: this row has 1 field(s); column 'x' is field 2\n"
       "  0.5\n"
       "  ^~~\n"
       "@DIR@/empty.csv: error: the data file has no header line (time, then the data columns)\n"
       "@DIR@/header_only.csv: error: the data file has no data rows\n"},
  };
}

void write_data_files(const TempDir& dir) {
  dir.write("good.csv", kGoodData);
  dir.write("backwards.csv", "time,x\n0,1\n0.5,0.4\n 0.25, 0.4\n");
  dir.write("text.csv", "time,x\n0,1\n0.5,high\n");
  dir.write("short.csv", "time,x\n0,1\n0.5\n");
  dir.write("empty.csv", "");
  dir.write("header_only.csv", "time,x\n\n");
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size())
    s.replace(at, from.size(), to);
  return s;
}

TEST(Objectives, DiagnosticsHaveTheExactText) {
  TempDir dir("diag");
  write_data_files(dir);
  for (const DiagCase& d : diag_cases()) {
    SCOPED_TRACE(d.texts[0]);
    Compiled c = compile(d.texts, dir.path);
    EXPECT_FALSE(c.result.ok);
    EXPECT_TRUE(c.result.objectives.empty());
    EXPECT_EQ(c.diagnostics, replace_all(d.expected, "@DIR@", dir.path));
  }
}

// Every error names where it is: the objective's text or the data file (the rule of
// Diagnostics/FailFiles.ProduceExactlyTheExpectedTextWithLocations for model files).
TEST(Objectives, EveryErrorHasALocation) {
  TempDir dir("where");
  write_data_files(dir);
  for (const DiagCase& d : diag_cases()) {
    Compiled c = compile(d.texts, dir.path);
    std::stringstream lines(c.diagnostics);
    std::string line;
    size_t errors = 0;
    while (std::getline(lines, line)) {
      const size_t at = line.find(": error: ");
      if (at == std::string::npos || line[0] == ' ') continue;
      ++errors;
      const std::string where = line.substr(0, at);
      EXPECT_TRUE(where.rfind("<objective ", 0) == 0 || where.rfind(dir.path, 0) == 0) << line;
    }
    EXPECT_GT(errors, 0u) << c.diagnostics;
  }
}

// The diagnostic kinds made for objectives are each produced above (no .mbs file can produce
// them: test_cli_diagnostics exempts them from its coverage test because of this one).
TEST(Objectives, EveryObjectiveDiagnosticKindIsProduced) {
  TempDir dir("kinds");
  write_data_files(dir);
  std::set<std::string> seen;
  for (const DiagCase& d : diag_cases())
    for (const std::string& k : compile(d.texts, dir.path).result.diagnostic_kinds) seen.insert(k);
  size_t objective_kinds = 0;
  for (size_t i = 0; i < mbs::diag_kind_count(); ++i) {
    const std::string name = mbs::diag_info(static_cast<mbs::DiagKind>(i)).name;
    if (name.rfind("objective_", 0) != 0) continue;
    ++objective_kinds;
    EXPECT_TRUE(seen.count(name)) << name;
  }
  EXPECT_EQ(objective_kinds, 6u);
  for (const char* shared :
       {"unknown_function", "bad_call", "bad_subscript", "unsupported", "syntax_error"})
    EXPECT_TRUE(seen.count(shared)) << shared;
}

TEST(Objectives, OneBadTextFailsTheWholeSetAndNoTextIsNoObjective) {
  Compiled c = compile({"max(x)", "max(y)"});
  EXPECT_FALSE(c.result.ok);
  EXPECT_TRUE(c.result.objectives.empty());
  Compiled none = compile({});
  EXPECT_TRUE(none.result.ok);
  EXPECT_TRUE(none.result.objectives.empty());
}

TEST(Objectives, TheObjectivesOutliveTheirCompileAndTheModelsNames) {
  std::vector<Objective> kept;
  {
    Compiled c = compile({"max(2 * x + time)"});
    ASSERT_TRUE(c.result.ok) << c.diagnostics;
    kept = c.result.objectives;
  }
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].n_outputs, static_cast<int32_t>(decay_model()->output_names.size()));
  ObjectiveAccumulator a(kept[0]);
  a.add(0.25, exact_row(*decay_model(), 0.25));
  EXPECT_DOUBLE_EQ(a.value(), 2 * std::exp(-kA * 0.25) + 0.25);
  EXPECT_EQ(mbs::rt::reduction_name(Reduction::MaxAbs), "maxabs");
}

}  // namespace
