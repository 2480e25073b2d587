// Co-simulation stepping of the integrators (runtime/solvers/Integrator.h): advance_to in pieces
// against one run to the same end, for every method; the start time of a start vector; inputs
// held over the steps (set_input) and parameters changed between steps (set_parameters).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "fmu_test_util.h"
#include "runtime/solvers/Integrator.h"

namespace mbs {
namespace {

using rt::SolverKind;
using rt::SolveStatus;

rt::SolverOptions options(SolverKind kind, double h, double t_end) {
  rt::SolverOptions o;
  o.solver = kind;
  o.h = h;
  o.t_end = t_end;
  return o;
}

std::shared_ptr<const rt::CompiledModel> oscillator() {
  static auto m = testutil::compile_source("fmi_advance_osc", testutil::kOscillatorSource);
  return m;
}

std::vector<double> state(const rt::Integrator& s) {
  return {s.symbols().begin(), s.symbols().end()};
}

bool bitwise_equal(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

const SolverKind kAll[] = {SolverKind::GenAlpha, SolverKind::Newmark, SolverKind::Trapezoidal,
                           SolverKind::Rk4,      SolverKind::Euler,   SolverKind::Ode23,
                           SolverKind::Dopri5};

TEST(FmiAdvance, PiecesOfWholeStepsAreBitwiseOneRun) {
  const auto m = oscillator();
  ASSERT_TRUE(m);
  for (const SolverKind kind : kAll) {
    if (kind == SolverKind::Ode23 || kind == SolverKind::Dopri5) continue;  // see below
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    auto one = rt::make_integrator(m, options(kind, 0.01, 1.0));
    ASSERT_EQ(one->run(nullptr), SolveStatus::Finished);
    auto pieces = rt::make_integrator(m, options(kind, 0.01, 1.0));
    for (const double t : {0.25, 0.5, 0.8, 1.0}) {
      ASSERT_EQ(pieces->advance_to(t), SolveStatus::Ok);
      EXPECT_EQ(pieces->time(), t);
    }
    EXPECT_TRUE(bitwise_equal(state(*one), state(*pieces)));
    EXPECT_EQ(one->statistics().steps, pieces->statistics().steps);
  }
}

TEST(FmiAdvance, AnyPiecesReachTheirEndAndStayClose) {
  const auto m = oscillator();
  ASSERT_TRUE(m);
  const int x = testutil::output_column(*m, "x");
  for (const SolverKind kind : kAll) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    auto one = rt::make_integrator(m, options(kind, 0.002, 1.0));
    ASSERT_EQ(one->run(nullptr), SolveStatus::Finished);
    const double x_one = one->evaluate_outputs()[static_cast<size_t>(x)];
    auto pieces = rt::make_integrator(m, options(kind, 0.002, 1.0));
    // pieces that are not multiples of h, one shorter than h, one beyond options.t_end
    double t = 0.0;
    for (const double dt : {0.0333, 0.001, 0.3, 0.1234567, 0.5422433}) {
      t += dt;
      ASSERT_EQ(pieces->advance_to(t), SolveStatus::Ok);
      EXPECT_EQ(pieces->time(), t);
      EXPECT_EQ(pieces->t_end(), t);
    }
    const double x_pieces = pieces->evaluate_outputs()[static_cast<size_t>(x)];
    const double tol = kind == SolverKind::Euler ? 2e-2 : 1e-3;  // first order
    EXPECT_NEAR(x_pieces, x_one, 0.1 * tol);
    EXPECT_NEAR(x_pieces, std::cos(2.0), tol);
    // a zero-length piece is nothing; one further on goes beyond the first t_end
    EXPECT_EQ(pieces->advance_to(t), SolveStatus::Ok);
    ASSERT_EQ(pieces->advance_to(1.5), SolveStatus::Ok);
    EXPECT_NEAR(pieces->evaluate_outputs()[static_cast<size_t>(x)], std::cos(3.0), tol);
    EXPECT_THROW(pieces->advance_to(1.0), rt::SolverSetupError);
  }
}

TEST(FmiAdvance, AnalyticOscillatorAtTheEndOfEachPiece) {
  const auto m = oscillator();
  ASSERT_TRUE(m);
  const int x = testutil::output_column(*m, "x"), z = testutil::output_column(*m, "z");
  auto s = rt::make_integrator(m, options(SolverKind::GenAlpha, 1e-3, 2.0));
  for (int n = 1; n <= 20; ++n) {
    const double t = 0.1 * n;
    ASSERT_EQ(s->advance_to(t), SolveStatus::Ok);
    const auto out = s->evaluate_outputs();
    EXPECT_NEAR(out[static_cast<size_t>(x)], std::cos(2.0 * t), 2e-5) << t;
    EXPECT_NEAR(out[static_cast<size_t>(z)], std::exp(-t), 1e-6) << t;
  }
}

TEST(FmiAdvance, StartVectorWithAnotherStartTime) {
  const auto m = oscillator();
  ASSERT_TRUE(m);
  const int x = testutil::output_column(*m, "x");
  for (const SolverKind kind : {SolverKind::GenAlpha, SolverKind::Rk4, SolverKind::Dopri5}) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    auto s = rt::make_integrator(m, options(kind, 1e-3, 3.0));
    std::vector<double> v = m->v0;
    v[static_cast<size_t>(m->slot_time)] = 2.0;
    s->set_start(v);
    EXPECT_EQ(s->time(), 2.0);
    ASSERT_EQ(s->initialize(), SolveStatus::Ok);
    EXPECT_EQ(s->grid_steps(), 1000);
    ASSERT_EQ(s->run(nullptr), SolveStatus::Finished);
    EXPECT_EQ(s->time(), 3.0);
    EXPECT_NEAR(s->evaluate_outputs()[static_cast<size_t>(x)], std::cos(2.0), 1e-4);
    // a start time at or after t_end is refused
    auto late = rt::make_integrator(m, options(kind, 1e-3, 3.0));
    v[static_cast<size_t>(m->slot_time)] = 3.0;
    EXPECT_THROW(late->set_start(v), rt::SolverSetupError);
  }
}

TEST(FmiAdvance, InputsAreHeldOverTheSteps) {
  const auto base = testutil::compile_source("fmi_advance_ramp", testutil::kRampSource);
  ASSERT_TRUE(base);
  const auto& m = base;
  ASSERT_EQ(m->inputs.size(), 1u);
  const int y = testutil::output_column(*m, "y"), p = testutil::output_column(*m, "p");
  for (const SolverKind kind : kAll) {
    if (kind == SolverKind::Euler) continue;  // first order: p is not exact
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    auto s = rt::make_integrator(m, options(kind, 0.01, 1.0));
    // u = k on [0.1 (k - 1), 0.1 k): y and p are piecewise linear and quadratic
    double y_exact = 0.0, p_exact = 0.0, pd_exact = 0.0;
    for (int k = 1; k <= 10; ++k) {
      const double u = k, t = 0.1 * k, H = 0.1;
      s->set_input(0, u);
      ASSERT_EQ(s->advance_to(t), SolveStatus::Ok);
      y_exact += u * H;
      p_exact += pd_exact * H + 0.5 * u * H * H;
      pd_exact += u * H;
      const auto out = s->evaluate_outputs();
      EXPECT_NEAR(out[static_cast<size_t>(y)], y_exact, 1e-9 * (1 + y_exact)) << t;
      EXPECT_NEAR(out[static_cast<size_t>(p)], p_exact, 1e-9 * (1 + p_exact)) << t;
      EXPECT_EQ(s->symbols()[static_cast<size_t>(m->input_slot[0])], u);
    }
    EXPECT_THROW(s->set_input(1, 0.0), rt::SolverSetupError);
  }
}

TEST(FmiAdvance, InputsRestartStepToo) {
  const auto base = testutil::compile_source("fmi_advance_ramp4", testutil::kRampSource);
  ASSERT_TRUE(base);
  const auto& m = base;
  const int y = testutil::output_column(*m, "y");
  for (const SolverKind kind : {SolverKind::Trapezoidal, SolverKind::Dopri5}) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    auto s = rt::make_integrator(m, options(kind, 0.1, 1.0));
    double y_exact = 0.0;
    for (int k = 1; k <= 10; ++k) {
      s->set_input(0, -k);
      const SolveStatus st = s->step();
      ASSERT_EQ(st, k < 10 ? SolveStatus::Ok : SolveStatus::Finished);
      y_exact -= 0.1 * k;
      EXPECT_NEAR(s->evaluate_outputs()[static_cast<size_t>(y)], y_exact, 1e-12);
    }
  }
}

TEST(FmiAdvance, ParametersChangedBetweenSteps) {
  const auto base = testutil::compile_source("fmi_advance_ramp2", testutil::kRampSource);
  ASSERT_TRUE(base);
  const auto& m = base;
  const int w = testutil::output_column(*m, "w"), y = testutil::output_column(*m, "y");
  auto s = rt::make_integrator(m, options(SolverKind::GenAlpha, 0.01, 1.0));
  s->set_input(0, 1.0);
  ASSERT_EQ(s->advance_to(0.5), SolveStatus::Ok);
  std::vector<double> v(s->symbols().begin(), s->symbols().end());
  size_t c = 0;
  while (m->parameters[c].name != "c") ++c;
  v[static_cast<size_t>(m->parameter_slot[c])] = 5.0;
  s->set_parameters(v);
  ASSERT_EQ(s->advance_to(1.0), SolveStatus::Ok);
  const auto out = s->evaluate_outputs();
  EXPECT_NEAR(out[static_cast<size_t>(y)], 1.0, 1e-12);
  EXPECT_NEAR(out[static_cast<size_t>(w)], 5.0, 1e-12);
  EXPECT_THROW(s->set_parameters(std::vector<double>(3, 0.0)), rt::SolverSetupError);
}

TEST(FmiAdvance, SnapshotContinuesBitwise) {
  const auto base = testutil::compile_source("fmi_advance_ramp3", testutil::kRampSource);
  ASSERT_TRUE(base);
  const auto& m = base;
  const auto osc = oscillator();
  for (const SolverKind kind : kAll) {
    SCOPED_TRACE(std::string(rt::solver_name(kind)));
    for (const auto& model : {m, osc}) {
      auto s = rt::make_integrator(model, options(kind, 0.01, 1.0));
      if (!model->inputs.empty()) s->set_input(0, 1.0);
      ASSERT_EQ(s->advance_to(0.305), SolveStatus::Ok);
      std::vector<double> snap;
      ASSERT_TRUE(s->save(snap));
      if (!model->inputs.empty()) s->set_input(0, -2.0);
      ASSERT_EQ(s->advance_to(0.7), SolveStatus::Ok);
      const auto a = state(*s);
      ASSERT_TRUE(s->restore(snap));
      EXPECT_EQ(s->time(), 0.305);
      if (!model->inputs.empty()) s->set_input(0, -2.0);
      ASSERT_EQ(s->advance_to(0.7), SolveStatus::Ok);
      EXPECT_TRUE(bitwise_equal(a, state(*s)));
      // into another integrator of the same kind
      auto other = rt::make_integrator(model, options(kind, 0.01, 1.0));
      ASSERT_TRUE(other->restore(snap));
      if (!model->inputs.empty()) other->set_input(0, -2.0);
      ASSERT_EQ(other->advance_to(0.7), SolveStatus::Ok);
      EXPECT_TRUE(bitwise_equal(a, state(*other)));
      // damaged snapshots are refused
      EXPECT_FALSE(s->restore(std::span<const double>(snap).first(snap.size() - 1)));
      auto bad = snap;
      bad[0] += 1;
      EXPECT_FALSE(s->restore(bad));
      bad = snap;
      bad.push_back(0.0);
      EXPECT_FALSE(s->restore(bad));
    }
  }
}

}  // namespace
}  // namespace mbs
