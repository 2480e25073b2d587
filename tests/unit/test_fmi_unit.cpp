// One FMU instance without the C API (runtime/fmi/Unit.h): co-simulation steps against one
// simulation, inputs held over the steps, parameters and start values, model exchange's
// derivatives and directional derivatives, the FMU state and its bytes, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fmu_test_util.h"
#include "runtime/fmi/Unit.h"

namespace mbs {
namespace {

using rt::fmi::Status;
using rt::fmi::Unit;

struct Fixture {
  std::shared_ptr<const rt::CompiledModel> model;
  std::shared_ptr<const rt::fmi::VariableTable> vars;
  uint32_t vr(const std::string& name) const {
    for (const auto& v : vars->vars)
      if (v.name == name) return v.vr;
    ADD_FAILURE() << "no variable " << name;
    return 0;
  }
  std::unique_ptr<Unit> unit(Unit::Kind kind, rt::SolverKind solver = rt::SolverKind::GenAlpha,
                             double h = 0.01) const {
    rt::SolverOptions o;
    o.solver = solver;
    o.h = h;
    o.t_end = 1.0;
    return std::make_unique<Unit>(model, vars, o, kind);
  }
};

Fixture make(std::shared_ptr<const rt::CompiledModel> m, std::vector<std::string> outputs) {
  Fixture f;
  f.model = std::move(m);
  auto t = std::make_shared<rt::fmi::VariableTable>();
  EXPECT_EQ(rt::fmi::fmu_variables(*f.model, outputs, *t), "");
  f.vars = t;
  return f;
}

const Fixture& oscillator() {
  static const Fixture f =
      make(testutil::compile_source("fmi_unit_osc", testutil::kOscillatorSource), {"x", "e"});
  return f;
}

const Fixture& ramp() {
  static const Fixture f =
      make(testutil::compile_source("fmi_unit_ramp", testutil::kRampSource), {"w"});
  return f;
}

double get(Unit& u, uint32_t vr) {
  double x = std::nan("");
  const uint32_t vrs[] = {vr};
  EXPECT_EQ(u.get_float64(vrs, std::span<double>(&x, 1)), Status::Ok) << u.message();
  return x;
}

Status set(Unit& u, uint32_t vr, double x) {
  const uint32_t vrs[] = {vr};
  return u.set_float64(vrs, std::span<const double>(&x, 1));
}

TEST(FmiUnit, CoSimulationStepsAreOneSimulation) {
  const Fixture& f = oscillator();
  for (const auto solver : {rt::SolverKind::GenAlpha, rt::SolverKind::Rk4}) {
    SCOPED_TRACE(std::string(rt::solver_name(solver)));
    rt::SolverOptions o;
    o.solver = solver;
    o.h = 0.01;
    o.t_end = 1.0;
    const testutil::Run run = testutil::simulate(*f.model, o);
    ASSERT_EQ(run.status, rt::SolveStatus::Finished);
    const int cx = testutil::output_column(*f.model, "x");
    auto u = f.unit(Unit::Kind::CoSimulation, solver);
    ASSERT_EQ(u->setup_experiment(std::nullopt, 0.0, 1.0), Status::Ok);
    ASSERT_EQ(u->exit_initialization(), Status::Ok) << u->message();
    EXPECT_EQ(get(*u, f.vr("x")), 1.0);
    double t = 0.0;
    for (size_t n = 1; n < run.t.size(); ++n) {
      ASSERT_EQ(u->do_step(t, 0.01), Status::Ok) << u->message();
      t = u->time();
      EXPECT_NEAR(t, run.t[n], 1e-12);
      EXPECT_EQ(get(*u, f.vr("x")), run.rows[n][static_cast<size_t>(cx)]) << t;
    }
    EXPECT_NEAR(get(*u, f.vr("x")), std::cos(2.0), 1e-3);
    EXPECT_NEAR(get(*u, f.vr("e")), 1.0, 1e-3);  // x^2 + x'^2/k: the energy, an output column
    EXPECT_NEAR(get(*u, f.vr("z")), std::exp(-1.0), 1e-4);
    EXPECT_EQ(get(*u, 0), t);  // time
    // from the wrong time, and beyond the stop time
    EXPECT_EQ(u->do_step(0.5, 0.01), Status::Error);
    EXPECT_NE(u->message().find("t = 0.5"), std::string::npos) << u->message();
    EXPECT_EQ(u->do_step(t, 0.5), Status::Error);
    EXPECT_NE(u->message().find("stop time"), std::string::npos) << u->message();
  }
}

// Issue 36: doStep(0, 1e300) never returned (at t = 1e300 a solver step of 0.01 does not move
// time). A communication step the solver's step cannot complete is refused at once.
TEST(FmiUnit, ACommunicationStepTimeCannotResolveIsRefused) {
  const Fixture& f = oscillator();
  auto u = f.unit(Unit::Kind::CoSimulation);
  ASSERT_EQ(u->setup_experiment(std::nullopt, 0.0, std::nullopt), Status::Ok);
  ASSERT_EQ(u->exit_initialization(), Status::Ok) << u->message();
  EXPECT_EQ(u->do_step(0.0, 1e300), Status::Error);
  EXPECT_NE(u->message().find("cannot be completed"), std::string::npos) << u->message();
  EXPECT_EQ(u->time(), 0.0);
  ASSERT_EQ(u->do_step(0.0, 0.05), Status::Ok) << u->message();  // the unit still works
}

TEST(FmiUnit, InputsHeldBetweenSteps) {
  const Fixture& f = ramp();
  auto u = f.unit(Unit::Kind::CoSimulation);
  const uint32_t vu = f.vr("u");
  ASSERT_EQ(set(*u, vu, 3.0), Status::Ok) << u->message();
  EXPECT_EQ(get(*u, vu), 3.0);
  ASSERT_EQ(u->setup_experiment(std::nullopt, 1.0, std::nullopt), Status::Ok);
  ASSERT_EQ(u->exit_initialization(), Status::Ok) << u->message();
  double y = 0.0, t = 1.0;
  for (int k = 1; k <= 8; ++k) {
    const double value = k % 2 ? -1.0 * k : 0.5 * k;
    ASSERT_EQ(set(*u, vu, value), Status::Ok);
    ASSERT_EQ(u->do_step(t, 0.25), Status::Ok) << u->message();
    t += 0.25;
    y += 0.25 * value;
    EXPECT_NEAR(get(*u, f.vr("y")), y, 1e-12);
    EXPECT_NEAR(get(*u, f.vr("w")), 2.0 * y, 1e-12);  // w = c y
    EXPECT_EQ(get(*u, vu), value);
  }
  EXPECT_EQ(u->time(), 3.0);  // beyond the default stop time (options.t_end = 1)
  // a tunable parameter after initialization takes effect at the next step
  ASSERT_EQ(set(*u, f.vr("c"), 10.0), Status::Ok) << u->message();
  ASSERT_EQ(u->do_step(t, 0.25), Status::Ok);
  EXPECT_NEAR(get(*u, f.vr("w")), 10.0 * get(*u, f.vr("y")), 1e-12);
}

TEST(FmiUnit, ParametersAndStartValues) {
  const Fixture& f = oscillator();
  auto u = f.unit(Unit::Kind::CoSimulation, rt::SolverKind::GenAlpha, 1e-3);
  ASSERT_EQ(set(*u, f.vr("k"), 9.0), Status::Ok) << u->message();
  ASSERT_EQ(set(*u, f.vr("x"), 2.0), Status::Ok) << u->message();
  ASSERT_EQ(set(*u, f.vr("z"), 3.0), Status::Ok) << u->message();
  EXPECT_EQ(get(*u, f.vr("k")), 9.0);
  EXPECT_EQ(get(*u, f.vr("x")), 2.0);
  ASSERT_EQ(u->exit_initialization(), Status::Ok) << u->message();
  ASSERT_EQ(u->do_step(0.0, 0.5), Status::Ok);
  EXPECT_NEAR(get(*u, f.vr("x")), 2.0 * std::cos(1.5), 1e-4);
  EXPECT_NEAR(get(*u, f.vr("z")), 3.0 * std::exp(-0.5), 1e-5);
  // start values only before initialization
  EXPECT_EQ(set(*u, f.vr("x"), 1.0), Status::Error);
  EXPECT_NE(u->message().find("'x'"), std::string::npos) << u->message();
  // reset: the export's defaults again
  u->reset();
  EXPECT_EQ(u->time(), 0.0);
  EXPECT_EQ(get(*u, f.vr("k")), 4.0);
  EXPECT_EQ(get(*u, f.vr("x")), 1.0);
  EXPECT_FALSE(u->initialized());
}

TEST(FmiUnit, DerivedParametersFollowAfterInitialization) {
  const Fixture f =
      make(testutil::compile_source("fmi_unit_derived",
                                    "model D\n  parameter Real a = 1;\n  parameter Real b = 2*a;\n"
                                    "  Real y(start = 0);\nequation\n  der(y) = b;\nend D;\n"),
           {"y"});
  for (const auto kind : {Unit::Kind::CoSimulation, Unit::Kind::ModelExchange}) {
    auto u = f.unit(kind);
    ASSERT_EQ(u->exit_initialization(), Status::Ok) << u->message();
    ASSERT_EQ(set(*u, f.vr("a"), 3.0), Status::Ok) << u->message();
    EXPECT_EQ(get(*u, f.vr("b")), 6.0);
    if (kind == Unit::Kind::CoSimulation) {
      ASSERT_EQ(u->do_step(0.0, 0.5), Status::Ok);
      EXPECT_NEAR(get(*u, f.vr("y")), 3.0, 1e-12);
    } else {
      double dy = 0.0;
      ASSERT_EQ(u->get_derivatives(std::span<double>(&dy, 1)), Status::Ok);
      EXPECT_EQ(dy, 6.0);
    }
  }
}

// A constant of the FMU (a parameter the compiler used as a number: N sizes an array) and a
// calculated parameter (omega = sqrt(k/m)) are not set: the error names the variable and why;
// omega follows k.
TEST(FmiUnit, ConstantsAndCalculatedParametersAreNotSet) {
  const Fixture f = make(
      testutil::compile_source(
          "fmi_unit_folded",
          "model Folded\n  parameter Integer N = 3;\n  parameter Real k = 4, m = 1;\n"
          "  parameter Real omega = sqrt(k / m);\n  Real x[N](each start = 1, each fixed = true);\n"
          "equation\n  for i in 1:N loop\n    der(x[i]) = -omega * x[i];\n  end for;\n"
          "end Folded;\n"),
      {"x[1]"});
  auto u = f.unit(Unit::Kind::ModelExchange);
  EXPECT_EQ(set(*u, f.vr("N"), 4.0), Status::Error);
  EXPECT_NE(u->message().find("'N' is a constant of the FMU"), std::string::npos) << u->message();
  EXPECT_NE(u->message().find("new export"), std::string::npos) << u->message();
  EXPECT_EQ(set(*u, f.vr("omega"), 5.0), Status::Error);
  EXPECT_NE(u->message().find("'omega' is a calculated parameter"), std::string::npos)
      << u->message();
  ASSERT_EQ(set(*u, f.vr("k"), 9.0), Status::Ok) << u->message();
  ASSERT_EQ(u->exit_initialization(), Status::Ok) << u->message();
  EXPECT_EQ(get(*u, f.vr("N")), 3.0);
  EXPECT_EQ(get(*u, f.vr("omega")), 3.0);
  std::vector<double> dx(3);
  ASSERT_EQ(u->get_derivatives(dx), Status::Ok) << u->message();
  EXPECT_EQ(dx[0], -3.0);
}

TEST(FmiUnit, Errors) {
  const Fixture& f = oscillator();
  auto u = f.unit(Unit::Kind::CoSimulation);
  const uint32_t bad[] = {100000};
  double x = 0.0;
  EXPECT_EQ(u->get_float64(bad, std::span<double>(&x, 1)), Status::Error);
  EXPECT_NE(u->message().find("100000"), std::string::npos);
  EXPECT_EQ(set(*u, 100000, 1.0), Status::Error);
  EXPECT_EQ(set(*u, f.vr("e"), 1.0), Status::Error);  // calculated
  EXPECT_NE(u->message().find("'e'"), std::string::npos) << u->message();
  EXPECT_EQ(set(*u, 0, 1.0), Status::Error);  // time
  EXPECT_EQ(set(*u, f.vr("k"), std::nan("")), Status::Error);
  EXPECT_NE(u->message().find("'k'"), std::string::npos) << u->message();
  EXPECT_EQ(get(*u, f.vr("k")), 4.0);  // a refused value is not kept
  EXPECT_EQ(set(*u, f.vr("x"), std::nan("")), Status::Error);
  EXPECT_EQ(get(*u, f.vr("x")), 1.0);
  EXPECT_EQ(u->do_step(0.0, 0.1), Status::Error);  // before initialization
  EXPECT_EQ(u->setup_experiment(std::nullopt, 1.0, 0.5), Status::Error);
  EXPECT_EQ(u->setup_experiment(-1.0, 0.0, std::nullopt), Status::Error);
  double dx[5];
  EXPECT_EQ(u->get_derivatives(dx), Status::Error);  // not model exchange
  const uint32_t k[] = {f.vr("x")};
  EXPECT_EQ(u->directional_derivative(k, k, std::span<const double>(dx, 1), std::span(dx, 1)),
            Status::Error);
}

TEST(FmiUnit, CoSimulationDirectionalDerivative) {
  const Fixture& f = oscillator();
  auto u = f.unit(Unit::Kind::CoSimulation);
  ASSERT_EQ(u->exit_initialization(), Status::Ok);
  ASSERT_EQ(u->do_step(0.0, 0.3), Status::Ok);
  const uint32_t unknowns[] = {f.vr("der(x,2)"), f.vr("der(z)"), f.vr("der(x)")};
  const uint32_t knowns[] = {f.vr("x"), f.vr("z")};
  const double seed[] = {1.0, 2.0};
  double sens[3];
  ASSERT_EQ(u->directional_derivative(unknowns, knowns, seed, sens), Status::Ok) << u->message();
  EXPECT_NEAR(sens[0], -4.0, 1e-12);
  EXPECT_NEAR(sens[1], -2.0, 1e-12);
  EXPECT_EQ(sens[2], 0.0);
  // the step continues as without
  const double x = get(*u, f.vr("x"));
  auto w = f.unit(Unit::Kind::CoSimulation);
  ASSERT_EQ(w->exit_initialization(), Status::Ok);
  ASSERT_EQ(w->do_step(0.0, 0.3), Status::Ok);
  EXPECT_EQ(get(*w, f.vr("x")), x);
}

TEST(FmiUnit, SolverFailureIsTheCliMessage) {
  const Fixture f = make(
      testutil::compile_source("fmi_unit_blowup",
                               "model Blowup\n  Real x(start = 1);\nequation\n  der(x) = x*x;\n"
                               "end Blowup;\n"),
      {"x"});
  auto u = f.unit(Unit::Kind::CoSimulation);
  ASSERT_EQ(u->exit_initialization(), Status::Ok) << u->message();
  EXPECT_EQ(u->do_step(0.0, 2.0), Status::Error);
  EXPECT_EQ(u->message().rfind("error: ", 0), 0u) << u->message();
  EXPECT_NE(u->message().find("t = "), std::string::npos) << u->message();
}

TEST(FmiUnit, ModelExchangeDerivatives) {
  const Fixture& f = oscillator();
  auto u = f.unit(Unit::Kind::ModelExchange);
  ASSERT_EQ(u->n_states(), 3u);  // [x | der(x) | z]
  ASSERT_EQ(set(*u, f.vr("k"), 9.0), Status::Ok);
  ASSERT_EQ(u->exit_initialization(), Status::Ok) << u->message();
  std::vector<double> x(3), dx(3), nominal(3);
  ASSERT_EQ(u->get_continuous_states(x), Status::Ok);
  EXPECT_EQ(x, (std::vector<double>{1.0, 0.0, 1.0}));
  const std::vector<double> s = {0.3, -0.7, 2.0};
  ASSERT_EQ(u->set_time(0.25), Status::Ok);
  ASSERT_EQ(u->set_continuous_states(s), Status::Ok);
  ASSERT_EQ(u->get_derivatives(dx), Status::Ok) << u->message();
  EXPECT_EQ(dx[0], -0.7);
  EXPECT_NEAR(dx[1], -9.0 * 0.3, 1e-14);
  EXPECT_NEAR(dx[2], -2.0, 1e-14);
  EXPECT_NEAR(get(*u, f.vr("der(x,2)")), -2.7, 1e-14);
  EXPECT_NEAR(get(*u, f.vr("e")), 0.09 + 0.49 / 9.0, 1e-14);
  EXPECT_EQ(get(*u, 0), 0.25);
  ASSERT_EQ(u->get_nominals(nominal), Status::Ok);
  EXPECT_EQ(nominal, (std::vector<double>{1.0, 1.0, 1.0}));
  // a tunable parameter changes the derivatives at once
  ASSERT_EQ(set(*u, f.vr("k"), 1.0), Status::Ok);
  ASSERT_EQ(u->get_derivatives(dx), Status::Ok);
  EXPECT_NEAR(dx[1], -0.3, 1e-14);

  // directional derivatives against central differences of the derivatives
  const std::vector<uint32_t> states = {f.vr("x"), f.vr("der(x)"), f.vr("z")};
  const std::vector<uint32_t> ders = {f.vr("der(x)"), f.vr("der(x,2)"), f.vr("der(z)")};
  for (size_t j = 0; j < 3; ++j) {
    const double seed[] = {1.0};
    std::vector<double> col(3);
    ASSERT_EQ(u->set_continuous_states(s), Status::Ok);
    ASSERT_EQ(u->directional_derivative(ders, std::span(&states[j], 1), seed, col), Status::Ok)
        << u->message();
    const double eps = 1e-6;
    std::vector<double> sp = s, sm = s, dp(3), dm(3);
    sp[j] += eps;
    sm[j] -= eps;
    ASSERT_EQ(u->set_continuous_states(sp), Status::Ok);
    ASSERT_EQ(u->get_derivatives(dp), Status::Ok);
    ASSERT_EQ(u->set_continuous_states(sm), Status::Ok);
    ASSERT_EQ(u->get_derivatives(dm), Status::Ok);
    for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(col[i], (dp[i] - dm[i]) / (2 * eps), 1e-8) << i << j;
  }
  // other pairs are not available
  const double seed[] = {1.0};
  double out = 0.0;
  const uint32_t e[] = {f.vr("e")}, k[] = {f.vr("k")};
  EXPECT_EQ(u->directional_derivative(e, std::span(&states[0], 1), seed, std::span(&out, 1)),
            Status::Error);
  EXPECT_NE(u->message().find("'e'"), std::string::npos);
  EXPECT_EQ(u->directional_derivative(std::span(&ders[0], 1), k, seed, std::span(&out, 1)),
            Status::Error);
  EXPECT_EQ(u->do_step(0.0, 0.1), Status::Error);
  EXPECT_EQ(u->set_continuous_states(std::vector<double>(2)), Status::Error);
}

TEST(FmiUnit, ModelExchangeRefusedWithConstraints) {
  const Fixture f = make(testutil::compile_source("fmi_unit_pendulum",
                                                  "model P\n  Real x(start = 1);\n"
                                                  "  Real y(start = 0);\n  Real lambda;\n"
                                                  "equation\n  der(der(x)) = -x*lambda;\n"
                                                  "  der(der(y)) = -9.81 - y*lambda;\n"
                                                  "  x*x + y*y = 1;\nend P;\n"),
                         {"x"});
  if (rt::fmi::model_exchange_obstacle(*f.model).empty()) GTEST_SKIP() << "no constraints left";
  auto u = f.unit(Unit::Kind::ModelExchange);
  EXPECT_EQ(u->exit_initialization(), Status::Error);
  EXPECT_NE(u->message().find("co-simulation"), std::string::npos) << u->message();
  auto cs = f.unit(Unit::Kind::CoSimulation);
  ASSERT_EQ(cs->exit_initialization(), Status::Ok) << cs->message();
  const uint32_t dx[] = {f.vr("der(x)")}, xs[] = {f.vr("x")};
  const double one[] = {1.0};
  double out[1];
  EXPECT_EQ(cs->directional_derivative(dx, xs, one, out), Status::Error);
  EXPECT_NE(cs->message().find("constraints"), std::string::npos) << cs->message();
  ASSERT_EQ(cs->do_step(0.0, 0.5), Status::Ok) << cs->message();
  const double x = get(*cs, f.vr("x")), y = get(*cs, f.vr("y"));
  EXPECT_NEAR(x * x + y * y, 1.0, 1e-8);
}

// Model exchange of a model with events (docs/fmu.md, "Model exchange"): the importer puts the
// state past a crossing; completed_integrator_step asks for event mode (the condition rose),
// update_discrete_states fires the when (reinit and assignment from the values before), a second
// update fires nothing; an FMU state taken before the event carries the conditions, so the event
// fires again from it.
TEST(FmiUnit, ModelExchangeEventsFireInEventMode) {
  const Fixture f = make(testutil::compile_source("fmi_unit_ball", R"mbs(
model Ball
  parameter Real e = 0.8;
  Real h(start = 1, fixed = true), v(start = 0, fixed = true);
  Integer n(start = 0);
equation
  der(h) = v;
  der(v) = -9.81;
  when h < 0 then
    reinit(v, -e * pre(v));
    n = pre(n) + 1;
  end when;
end Ball;
)mbs"),
                         {"n"});
  auto u = f.unit(Unit::Kind::ModelExchange);
  ASSERT_EQ(u->n_event_indicators(), 1u);
  ASSERT_EQ(u->exit_initialization(), Status::Ok) << u->message();
  std::vector<double> z(1), x(2);
  ASSERT_EQ(u->get_event_indicators(z), Status::Ok) << u->message();
  EXPECT_EQ(z[0], 1.0);  // h - 0
  std::vector<double> two(2);
  EXPECT_EQ(u->get_event_indicators(two), Status::Error);
  bool enter = true, changed = true;
  ASSERT_EQ(u->update_discrete_states(changed), Status::Ok);
  EXPECT_FALSE(changed);
  ASSERT_EQ(u->completed_integrator_step(enter), Status::Ok);
  EXPECT_FALSE(enter);
  ASSERT_EQ(u->set_continuous_states(std::vector<double>{-0.01, -2.0}), Status::Ok);
  ASSERT_EQ(u->get_event_indicators(z), Status::Ok);
  EXPECT_EQ(z[0], -0.01);
  ASSERT_EQ(u->completed_integrator_step(enter), Status::Ok);
  EXPECT_TRUE(enter);
  Unit::State before;
  ASSERT_EQ(u->get_state(before), Status::Ok);
  for (int pass = 0; pass < 2; ++pass) {
    SCOPED_TRACE(pass == 0 ? "the event" : "again from the FMU state before it");
    EXPECT_EQ(get(*u, f.vr("n")), 0.0);
    ASSERT_EQ(u->update_discrete_states(changed), Status::Ok) << u->message();
    EXPECT_TRUE(changed);
    ASSERT_EQ(u->get_continuous_states(x), Status::Ok);
    EXPECT_EQ(x[0], -0.01);
    EXPECT_EQ(x[1], 0.8 * 2.0);
    EXPECT_EQ(get(*u, f.vr("n")), 1.0);
    ASSERT_EQ(u->update_discrete_states(changed), Status::Ok);  // nothing rose since
    EXPECT_FALSE(changed);
    EXPECT_EQ(get(*u, f.vr("n")), 1.0);
    ASSERT_EQ(u->completed_integrator_step(enter), Status::Ok);
    EXPECT_FALSE(enter);
    // the state's bytes carry the conditions too
    const std::vector<uint8_t> bytes = u->serialize(before);
    Unit::State back;
    ASSERT_EQ(u->deserialize(bytes, back), Status::Ok) << u->message();
    EXPECT_EQ(back.conditions, before.conditions);
    ASSERT_EQ(u->set_state(back), Status::Ok) << u->message();
  }
}

// initial() is true at the event of exit_initialization, terminal() at terminate; an event
// iteration that does not end is an error with the integrator's note.
TEST(FmiUnit, ModelExchangeInitialTerminalAndAnIterationThatDoesNotEnd) {
  const Fixture f = make(testutil::compile_source("fmi_unit_energy", R"mbs(
model Energy
  parameter Real k = 4;
  Real x(start = 1, fixed = true), v(start = 0, fixed = true);
  discrete Real e0, e1;
  Integer starts(start = 0);
equation
  der(x) = v;
  der(v) = -k * x;
  when initial() then
    e0 = 0.5 * v^2 + 0.5 * k * x^2;
    starts = pre(starts) + 1;
  end when;
  when terminal() then
    e1 = 0.5 * v^2 + 0.5 * k * x^2;
  end when;
end Energy;
)mbs"),
                         {});
  auto u = f.unit(Unit::Kind::ModelExchange);
  EXPECT_EQ(u->n_event_indicators(), 0u);
  ASSERT_EQ(u->exit_initialization(), Status::Ok) << u->message();
  EXPECT_EQ(get(*u, f.vr("e0")), 2.0);
  EXPECT_EQ(get(*u, f.vr("starts")), 1.0);
  EXPECT_EQ(get(*u, f.vr("e1")), 0.0);
  bool changed = true;
  ASSERT_EQ(u->update_discrete_states(changed), Status::Ok);
  EXPECT_FALSE(changed);
  EXPECT_EQ(get(*u, f.vr("starts")), 1.0);
  ASSERT_EQ(u->set_continuous_states(std::vector<double>{0.5, 1.0}), Status::Ok);
  EXPECT_EQ(get(*u, f.vr("e1")), 0.0);
  ASSERT_EQ(u->terminate(), Status::Ok) << u->message();
  EXPECT_EQ(get(*u, f.vr("e1")), 0.5 + 0.5);
  EXPECT_EQ(get(*u, f.vr("e0")), 2.0);
  for (const auto& v : f.vars->vars) {
    if (v.name == "e0" || v.name == "starts") {
      EXPECT_EQ(v.variability, rt::fmi::Variability::Discrete) << v.name;
    } else if (v.name == "x") {
      EXPECT_EQ(v.variability, rt::fmi::Variability::Continuous);
    }
  }

  // a reinit at the start: the first event mode after initialization says the states changed
  const Fixture kick = make(testutil::compile_source("fmi_unit_kick", R"mbs(
model Kick
  Real x(start = 0, fixed = true), v(start = 0, fixed = true);
equation
  der(x) = v;
  der(v) = 0;
  when initial() then
    reinit(v, 3);
  end when;
end Kick;
)mbs"),
                            {});
  auto k = kick.unit(Unit::Kind::ModelExchange);
  ASSERT_EQ(k->exit_initialization(), Status::Ok) << k->message();
  std::vector<double> xv(2);
  ASSERT_EQ(k->get_continuous_states(xv), Status::Ok);
  EXPECT_EQ(xv, (std::vector<double>{0.0, 3.0}));
  ASSERT_EQ(k->update_discrete_states(changed), Status::Ok);
  EXPECT_TRUE(changed);
  ASSERT_EQ(k->update_discrete_states(changed), Status::Ok);
  EXPECT_FALSE(changed);

  const Fixture g = make(testutil::compile_source("fmi_unit_no_end", R"mbs(
model NoEnd
  Real h(start = 1, fixed = true), v(start = 0, fixed = true);
  Integer k, n;
equation
  der(h) = v;
  der(v) = -9.81;
  when h < 0 then
    k = pre(k) + 1;
  end when;
  when change(k) or change(n) then
    n = pre(n) + 1;
  end when;
end NoEnd;
)mbs"),
                         {});
  auto w = g.unit(Unit::Kind::ModelExchange);
  ASSERT_EQ(w->exit_initialization(), Status::Ok) << w->message();
  ASSERT_EQ(w->set_continuous_states(std::vector<double>{-0.01, -1.0}), Status::Ok);
  EXPECT_EQ(w->update_discrete_states(changed), Status::Error);
  EXPECT_NE(w->message().find("event iteration did not end"), std::string::npos) << w->message();
  EXPECT_NE(w->message().find("change(k) or change(n)"), std::string::npos) << w->message();
}

TEST(FmiUnit, StateSnapshotAndBytes) {
  for (const Fixture* f : {&oscillator(), &ramp()}) {
    for (const auto solver : {rt::SolverKind::GenAlpha, rt::SolverKind::Dopri5}) {
      SCOPED_TRACE(std::string(rt::solver_name(solver)));
      auto u = f->unit(Unit::Kind::CoSimulation, solver);
      const bool has_input = !f->model->inputs.empty();
      if (has_input) {
        ASSERT_EQ(set(*u, f->vr("u"), 2.0), Status::Ok);
      }
      ASSERT_EQ(u->exit_initialization(), Status::Ok) << u->message();
      ASSERT_EQ(u->do_step(0.0, 0.3), Status::Ok);
      Unit::State s;
      ASSERT_EQ(u->get_state(s), Status::Ok);
      const std::vector<uint8_t> bytes = u->serialize(s);
      const auto continue_to_end = [&](Unit& w) {
        if (has_input) {
          EXPECT_EQ(set(w, f->vr("u"), -1.0), Status::Ok);
        }
        EXPECT_EQ(w.do_step(0.3, 0.35), Status::Ok) << w.message();
        std::vector<double> values(f->vars->vars.size());
        std::vector<uint32_t> vrs;
        for (const auto& v : f->vars->vars) vrs.push_back(v.vr);
        EXPECT_EQ(w.get_float64(vrs, values), Status::Ok) << w.message();
        return values;
      };
      const auto a = continue_to_end(*u);
      ASSERT_EQ(u->set_state(s), Status::Ok) << u->message();
      EXPECT_EQ(u->time(), 0.3);
      const auto b = continue_to_end(*u);
      ASSERT_EQ(a.size(), b.size());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)), 0);
      // through the bytes into a fresh unit
      auto fresh = f->unit(Unit::Kind::CoSimulation, solver);
      Unit::State s2;
      ASSERT_EQ(fresh->deserialize(bytes, s2), Status::Ok) << fresh->message();
      ASSERT_EQ(fresh->set_state(s2), Status::Ok) << fresh->message();
      EXPECT_TRUE(fresh->initialized());
      const auto c = continue_to_end(*fresh);
      EXPECT_EQ(std::memcmp(a.data(), c.data(), a.size() * sizeof(double)), 0);
      // a state whose integrator part does not fit is refused; the unit goes on from where it was
      Unit::State wrong = s;
      wrong.integrator.pop_back();
      EXPECT_EQ(u->set_state(wrong), Status::Error);
      EXPECT_NEAR(u->time(), 0.65, 1e-12);
      EXPECT_EQ(u->do_step(u->time(), 0.1), Status::Ok) << u->message();
      // damaged bytes: every truncation, a flipped magic, another model's name
      Unit::State s3;
      for (size_t n = 0; n < bytes.size(); ++n)
        EXPECT_EQ(fresh->deserialize(std::span(bytes).first(n), s3), Status::Error) << n;
      auto bad = bytes;
      bad[0] ^= 1;
      EXPECT_EQ(fresh->deserialize(bad, s3), Status::Error);
      bad = bytes;
      bad[16 + 8] ^= 1;  // the first letter of the model's name
      EXPECT_EQ(fresh->deserialize(bad, s3), Status::Error);
      EXPECT_NE(fresh->message().find("model"), std::string::npos) << fresh->message();
      // any one byte changed: refused, or a state that set_state takes or refuses, never a crash
      for (size_t n = 0; n < bytes.size(); ++n) {
        auto flipped = bytes;
        flipped[n] ^= 0xa5;
        Unit::State s4;
        if (fresh->deserialize(flipped, s4) == Status::Ok) (void)fresh->set_state(s4);
      }
    }
  }
}

// The co-simulation solver's numeric options are fixed FMU parameters "solver.<key>": their start
// values are the export's, a value set before initialization is the solver's (a unit with
// solver.h = 0.005 steps like one exported with --step 0.005), and wrong values or a set after
// initialization are errors naming the parameter.
TEST(FmiUnit, SolverOptionsAreFmuParameters) {
  auto model = testutil::compile_source("fmi_unit_osc_opts", testutil::kOscillatorSource);
  rt::SolverOptions exported;
  exported.h = 0.01;
  exported.t_end = 1.0;
  auto table = std::make_shared<rt::fmi::VariableTable>();
  ASSERT_EQ(rt::fmi::fmu_variables(*model, {"x"}, *table, &exported), "");
  std::map<std::string, const rt::fmi::Variable*> by_name;
  for (const rt::fmi::Variable& v : table->vars) by_name[v.name] = &v;
  ASSERT_TRUE(by_name.count("solver.h") && by_name.count("solver.rtol") &&
              by_name.count("solver.newton_max_iter"));
  EXPECT_FALSE(by_name.count("solver.t_end"));  // the importer's experiment decides it
  EXPECT_EQ(by_name["solver.h"]->start, 0.01);
  EXPECT_EQ(by_name["solver.h"]->variability, rt::fmi::Variability::Fixed);
  EXPECT_EQ(by_name["solver.h"]->causality, rt::fmi::Causality::Parameter);
  const uint32_t h_vr = by_name["solver.h"]->vr, x_vr = by_name["x"]->vr;
  const uint32_t iter_vr = by_name["solver.newton_max_iter"]->vr;

  auto run = [&](Unit& u, double h_comm) {
    EXPECT_EQ(u.setup_experiment(std::nullopt, 0.0, 1.0), Status::Ok);
    EXPECT_EQ(u.exit_initialization(), Status::Ok) << u.message();
    for (int k = 0; k < 10; ++k) EXPECT_EQ(u.do_step(k * h_comm, h_comm), Status::Ok);
    return get(u, x_vr);
  };
  Unit set_h(model, table, exported, Unit::Kind::CoSimulation);
  EXPECT_EQ(set(set_h, h_vr, 0.005), Status::Ok) << set_h.message();
  EXPECT_EQ(get(set_h, h_vr), 0.005);
  const double with_set = run(set_h, 0.02);
  rt::SolverOptions fine = exported;
  fine.h = 0.005;
  Unit exported_fine(model, table, fine, Unit::Kind::CoSimulation);
  EXPECT_EQ(with_set, run(exported_fine, 0.02));
  Unit coarse(model, table, exported, Unit::Kind::CoSimulation);
  EXPECT_NE(with_set, run(coarse, 0.02));  // the option made a difference
  EXPECT_NEAR(with_set, std::cos(2 * 0.2), 1e-3);
  // after initialization: refused, naming the parameter
  EXPECT_EQ(set(set_h, h_vr, 0.001), Status::Error);
  EXPECT_NE(set_h.message().find("solver.h"), std::string::npos) << set_h.message();
  // wrong values
  Unit fresh(model, table, exported, Unit::Kind::CoSimulation);
  EXPECT_EQ(set(fresh, iter_vr, 2.5), Status::Error);
  EXPECT_NE(fresh.message().find("whole numbers"), std::string::npos) << fresh.message();
  EXPECT_EQ(set(fresh, h_vr, -1.0), Status::Error);
  EXPECT_NE(fresh.message().find("solver.h"), std::string::npos) << fresh.message();
  // reset brings the export's values back
  EXPECT_EQ(set(fresh, h_vr, 0.002), Status::Ok);
  fresh.reset();
  EXPECT_EQ(get(fresh, h_vr), 0.01);
}

}  // namespace
}  // namespace mbs
