// Top-level inputs (docs/language.md, "Inputs and outputs"): `input Real u` in the model itself
// is a known function of time, not an unknown. Checked against closed forms with an implicit and
// an explicit solver, set at run time through rt::Instance and mbs::Session and at compile time
// through --set, and a mechanism driven by an input torque against the same mechanism with the
// torque a parameter of the same value.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/Session.h"
#include "mech_test_util.h"
#include "runtime/session/Instance.h"

namespace mbs {
namespace {

using testutil::output_column;

const char* const kLag = R"mbs(
model Lag
  input Real u(start = 1, unit = "N") "applied force";
  Real x(start = 0);
equation
  der(x) = -x + u;
end Lag;
)mbs";

testutil::Run run(const rt::CompiledModel& m, rt::SolverKind kind, const std::vector<double>& v) {
  rt::SolverOptions o;
  o.solver = kind;
  o.t_end = 2.0;
  o.h = 1e-3;
  o.output_every = 100;
  auto solver = rt::make_integrator(m, o);
  solver->set_start(v);
  testutil::Run r;
  r.status = solver->run([&](double t, std::span<const double> out) {
    r.t.push_back(t);
    r.rows.emplace_back(out.begin(), out.end());
    return 0;
  });
  return r;
}

// x(t) = a (1 - e^-t) and the column of u reads a at every row
void expect_lag(const rt::CompiledModel& m, const testutil::Run& r, double a, double tol) {
  ASSERT_EQ(r.status, rt::SolveStatus::Finished);
  ASSERT_GT(r.t.size(), 10u);
  const int x = output_column(m, "x"), u = output_column(m, "u");
  for (size_t i = 0; i < r.t.size(); ++i) {
    EXPECT_NEAR(r.rows[i][static_cast<size_t>(x)], a * (1.0 - std::exp(-r.t[i])), tol)
        << "t = " << r.t[i];
    EXPECT_EQ(r.rows[i][static_cast<size_t>(u)], a);
  }
}

TEST(Inputs, AnInputIsASlotNotAnUnknown) {
  auto m = testutil::compile_source("lag", kLag);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->inputs.size(), 1u);
  EXPECT_EQ(m->inputs[0].name, "u");
  EXPECT_EQ(m->inputs[0].source.line, 3u);
  ASSERT_EQ(m->input_slot.size(), 1u);
  EXPECT_EQ(m->v0[static_cast<size_t>(m->input_slot[0])], 1.0);
  EXPECT_EQ(m->n_y, 1);  // x only
  EXPECT_EQ(m->n_q + m->n_z, 0);
  EXPECT_TRUE(m->parameters.empty());
  const int u = output_column(*m, "u");
  EXPECT_EQ(m->output_unit[static_cast<size_t>(u)], "N");
  EXPECT_EQ(m->output_description[static_cast<size_t>(u)], "applied force");
  EXPECT_EQ(m->output_interface[static_cast<size_t>(u)], 0);
  EXPECT_EQ(m->output_source[static_cast<size_t>(u)].kind, rt::OutputSource::Kind::Unknown);
}

// dF/du is no column: the Newton matrix and the sensitivities' dF/dp have the unknowns' and the
// parameters' columns only, and the residual reads the input's slot (a new value moves it).
TEST(Inputs, TheJacobiansTreatTheInputSlotLikeAParameterSlot) {
  CompileOptions o;
  o.sensitivities = true;
  auto m = testutil::compile_source(
      "lag_sens",
      "model S\n  parameter Real k = 2;\n  input Real u(start = 0.5);\n  Real x(start = 1);\n"
      "equation\n  der(x) = -k * x * u + u^2;\nend S;\n",
      o);
  ASSERT_TRUE(m);
  ASSERT_TRUE(m->has_sensitivities());
  EXPECT_EQ(m->newton_matrix.cols, m->n_eq());
  EXPECT_EQ(m->sens_F_p.cols, 1);  // k only
  ASSERT_EQ(m->parameters.size(), 1u);
  std::vector<double> v = m->v0;
  v[static_cast<size_t>(m->yd_slot[0])] = 0.25;
  v[static_cast<size_t>(m->slot_c_y)] = 0.5;
  std::vector<double> r(1), jac(static_cast<size_t>(m->newton_matrix.nnz()));
  const size_t u = static_cast<size_t>(m->input_slot[0]);
  for (double value : {0.5, 3.0}) {
    v[u] = value;
    ASSERT_EQ(m->residual(v.data(), r.data()), 0);
    EXPECT_DOUBLE_EQ(r[0], 0.25 + 2 * 1 * value - value * value);
    ASSERT_EQ(m->newton_matrix.values(v.data(), jac.data()), 0);
    ASSERT_EQ(jac.size(), 1u);
    EXPECT_DOUBLE_EQ(jac[0], 1.0 + 0.5 * 2 * value);  // dF/dyd + c_y dF/dy
  }
  rt::Instance inst(m);
  EXPECT_THROW(inst.sensitivity_direction("u"), rt::SetError);
  EXPECT_NO_THROW(inst.sensitivity_direction("k"));
}

// An input in the leading matrix (a mass set from outside) makes it vary over a run: explicit
// methods refactor it instead of keeping the first factorization.
TEST(Inputs, AnInputInTheLeadingMatrixMakesItVary) {
  const std::string text =
      "model Mass\n  DECL;\n  Real x(start = 1);\nequation\n"
      "  m * der(x) = -x;\nend Mass;\n";
  const auto with = [&](const std::string& decl) {
    std::string t = text;
    t.replace(t.find("DECL"), 4, decl);
    return t;
  };
  auto by_input = testutil::compile_source("mass_input", with("input Real m(start = 4)"));
  auto by_parameter = testutil::compile_source("mass_parameter", with("parameter Real m = 4"));
  ASSERT_TRUE(by_input && by_parameter);
  EXPECT_FALSE(by_input->constant_leading_matrix);
  EXPECT_TRUE(by_parameter->constant_leading_matrix);
  const testutil::Run r = run(*by_input, rt::SolverKind::Rk4, by_input->v0);
  ASSERT_EQ(r.status, rt::SolveStatus::Finished);
  const int x = output_column(*by_input, "x");
  for (size_t i = 0; i < r.t.size(); ++i)
    EXPECT_NEAR(r.rows[i][static_cast<size_t>(x)], std::exp(-r.t[i] / 4), 1e-10);
}

TEST(Inputs, AConstantInputGivesTheClosedFormWithImplicitAndExplicitSolvers) {
  auto m = testutil::compile_source("lag", kLag);
  ASSERT_TRUE(m);
  {
    SCOPED_TRACE("gen-alpha");
    expect_lag(*m, run(*m, rt::SolverKind::GenAlpha, m->v0), 1.0, 2e-5);
  }
  {
    SCOPED_TRACE("rk4");
    expect_lag(*m, run(*m, rt::SolverKind::Rk4, m->v0), 1.0, 1e-9);
  }
}

TEST(Inputs, AnInputIsSetAtRunTimeWithoutACompile) {
  auto m = testutil::compile_source("lag", kLag);
  ASSERT_TRUE(m);
  rt::Instance inst(m);
  EXPECT_EQ(inst.input_index("u"), 0);
  inst.set_input("u", 2.5);
  EXPECT_EQ(inst.inputs_set().at("u"), 2.5);
  for (rt::SolverKind kind : {rt::SolverKind::GenAlpha, rt::SolverKind::Rk4}) {
    SCOPED_TRACE(static_cast<int>(kind));
    expect_lag(*m, run(*m, kind, inst.start_vector()), 2.5, 1e-4);
  }
  try {
    inst.set_parameter("u", 1.0);
    ADD_FAILURE() << "an input set as a parameter";
  } catch (const rt::SetError& e) {
    EXPECT_EQ(e.kind(), rt::SetError::Kind::UnknownName);
    EXPECT_NE(std::string(e.what()).find("it is an input"), std::string::npos) << e.what();
  }
  try {
    inst.set_input("x", 1.0);
    ADD_FAILURE() << "a state set as an input";
  } catch (const rt::SetError& e) {
    EXPECT_EQ(e.kind(), rt::SetError::Kind::UnknownName);
    EXPECT_NE(std::string(e.what()).find("set its start value"), std::string::npos) << e.what();
  }
  try {
    inst.set_start("u", 1.0);
    ADD_FAILURE() << "an input set as a start value";
  } catch (const rt::SetError& e) {
    EXPECT_EQ(e.kind(), rt::SetError::Kind::UnknownName);
    EXPECT_NE(std::string(e.what()).find("it is an input"), std::string::npos) << e.what();
  }
  EXPECT_EQ(inst.why_compile_time("u"), "");
  EXPECT_THROW(inst.set_input("u", std::nan("")), rt::SetError);
  inst.reset();
  EXPECT_EQ(inst.start_vector()[static_cast<size_t>(m->input_slot[0])], 1.0);
}

TEST(Inputs, ASessionSetsAnInputAtRunTime) {
  CompileOptions o;
  o.file = testutil::temp_path("lag_session.mbs");
  std::ofstream(o.file) << kLag;
  std::ostringstream diag, emit;
  Session s(o, diag);
  ASSERT_TRUE(s.compile(emit)) << diag.str();
  s.set_parameter("u", 3.0);
  EXPECT_FALSE(s.needs_compile());
  s.options().solver = rt::SolverKind::Rk4;
  s.options().t_end = 1.0;
  s.options().h = 1e-3;
  double x_end = 0.0;
  const int x = output_column(*s.model(), "x");
  SimulationRun r = s.simulate([&](double, std::span<const double> out) {
    x_end = out[static_cast<size_t>(x)];
    return 0;
  });
  ASSERT_EQ(r.status, rt::SolveStatus::Finished) << r.setup_error;
  EXPECT_NEAR(x_end, 3.0 * (1.0 - std::exp(-1.0)), 1e-9);
}

TEST(Inputs, TheStartValueComesFromTheBindingOrFromSet) {
  auto bound = testutil::compile_source(
      "lag_bound",
      "model B\n  parameter Real k = 2;\n  input Real u = 3 * k;\n  Real x;\n"
      "equation\n  der(x) = u;\nend B;\n");
  ASSERT_TRUE(bound);
  EXPECT_EQ(bound->v0[static_cast<size_t>(bound->input_slot[0])], 6.0);
  CompileOptions o;
  o.overrides["u"] = 4.0;
  auto set = testutil::compile_source("lag_set", kLag, o);
  ASSERT_TRUE(set);
  EXPECT_EQ(set->v0[static_cast<size_t>(set->input_slot[0])], 4.0);
  auto none = testutil::compile_source(
      "lag_none", "model N\n  input Real u;\n  Real x;\nequation\n  der(x) = u;\nend N;\n");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->v0[static_cast<size_t>(none->input_slot[0])], 0.0);
}

// A revolute joint driven by a torque: the torque an input, or a parameter of the same value.
std::string driven_pendulum(const std::string& torque_declaration) {
  return "model Driven\n  import Mechanics.*;\n  " + torque_declaration +
         ";\n  World world;\n"
         "  Revolute j(n = {0, 0, 1}, phi(start = 0.3, fixed = true), w(start = 0, fixed = "
         "true));\n"
         "  Body b(m = 1, r_cm = {0, -0.5, 0}, I = diagonal({0.01, 0.01, 0.01}));\n"
         "equation\n  connect(world.frame, j.frame_a);\n  connect(j.frame_b, b.frame_a);\n"
         "  j.tau = tau;\nend Driven;\n";
}

TEST(Inputs, AnInputTorqueDrivesAJointLikeAParameterOfTheSameValue) {
  auto with_input = testutil::compile_source("driven_input", driven_pendulum("input Real tau"));
  auto with_parameter =
      testutil::compile_source("driven_parameter", driven_pendulum("parameter Real tau = 1.5"));
  auto free_swing =
      testutil::compile_source("driven_free", driven_pendulum("parameter Real tau = 0"));
  ASSERT_TRUE(with_input && with_parameter && free_swing);
  ASSERT_EQ(with_input->inputs.size(), 1u);
  rt::Instance inst(with_input);
  inst.set_input("tau", 1.5);
  for (rt::SolverKind kind : {rt::SolverKind::GenAlpha, rt::SolverKind::Rk4}) {
    SCOPED_TRACE(static_cast<int>(kind));
    const testutil::Run a = run(*with_input, kind, inst.start_vector());
    const testutil::Run b = run(*with_parameter, kind, with_parameter->v0);
    ASSERT_EQ(a.status, rt::SolveStatus::Finished);
    ASSERT_EQ(b.status, rt::SolveStatus::Finished);
    ASSERT_EQ(a.t, b.t);
    const int phi_a = output_column(*with_input, "j.phi");
    const int phi_b = output_column(*with_parameter, "j.phi");
    const int tau_a = output_column(*with_input, "j.tau");
    for (size_t i = 0; i < a.t.size(); ++i) {
      EXPECT_EQ(a.rows[i][static_cast<size_t>(phi_a)], b.rows[i][static_cast<size_t>(phi_b)])
          << "t = " << a.t[i];
      EXPECT_EQ(a.rows[i][static_cast<size_t>(tau_a)], 1.5);
    }
    // the torque moves the pendulum away from its free swing
    const testutil::Run c = run(*free_swing, kind, free_swing->v0);
    ASSERT_EQ(c.status, rt::SolveStatus::Finished);
    EXPECT_GT(std::fabs(a.rows.back()[static_cast<size_t>(phi_a)] -
                        c.rows.back()[static_cast<size_t>(output_column(*free_swing, "j.phi"))]),
              0.1);
  }
}

// A closed loop (index-3 constraints, gen-alpha's Newton matrix with multipliers): the
// slider-crank example with its motor torque an input gives the example's numbers bitwise.
TEST(Inputs, AClosedLoopDrivenByAnInputTorqueIsTheExample) {
  std::ifstream in(std::string(MBS_SOURCE_DIR) + "/examples/mechanics/slider_crank.mbs");
  const std::string example((std::istreambuf_iterator<char>(in)), {});
  const std::string declaration = "parameter Real torque = 0.5";
  ASSERT_NE(example.find(declaration), std::string::npos);
  std::string driven = example;
  driven.replace(driven.find(declaration), declaration.size(), "input Real torque");
  auto by_parameter = testutil::compile_source("slider_crank_parameter", example);
  auto by_input = testutil::compile_source("slider_crank_input", driven);
  ASSERT_TRUE(by_parameter && by_input);
  ASSERT_EQ(by_input->inputs.size(), 1u);
  rt::Instance inst(by_input);
  inst.set_input("torque", 0.5);
  const testutil::Run a = run(*by_input, rt::SolverKind::GenAlpha, inst.start_vector());
  const testutil::Run b = run(*by_parameter, rt::SolverKind::GenAlpha, by_parameter->v0);
  ASSERT_EQ(a.status, rt::SolveStatus::Finished);
  ASSERT_EQ(b.status, rt::SolveStatus::Finished);
  ASSERT_EQ(a.t, b.t);
  for (const char* name : {"crank.phi", "crank.w", "slider.s"}) {
    const auto ca = static_cast<size_t>(output_column(*by_input, name));
    const auto cb = static_cast<size_t>(output_column(*by_parameter, name));
    for (size_t i = 0; i < a.t.size(); ++i)
      EXPECT_EQ(a.rows[i][ca], b.rows[i][cb]) << name << " at t = " << a.t[i];
  }
}

}  // namespace
}  // namespace mbs
