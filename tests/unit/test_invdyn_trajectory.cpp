// Inverse dynamics driven by a trajectory file (mbsc --trajectory): the spline and the file
// reader, and the efforts against the same motion given by an equation in the model.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "compiler/driver/Compile.h"
#include "invdyn_models.h"
#include "mech_test_util.h"
#include "runtime/invdyn/InverseDynamics.h"
#include "runtime/invdyn/Trajectory.h"

namespace {

std::string temp(const std::string& name) {
  return mbs::testutil::temp_path(name);
}

TEST(Trajectory, SplineIsExactForCubicsAndFileDerivativesAreUsed) {
  std::string path = temp("cubic.csv");
  {
    std::ofstream f(path);
    f.precision(17);
    f << "time,x,\"y\"\n";
    for (int k = 0; k <= 7; ++k) {
      double t = 0.3 * k + 0.01 * k * k;  // uneven steps
      f << t << "," << (2 - t + 0.5 * t * t - 0.25 * t * t * t) << "," << std::sin(t) << "\n";
    }
  }
  mbs::rt::Trajectory tr(path);
  ASSERT_EQ(tr.names().size(), 2u);
  EXPECT_EQ(tr.index("y"), 1);
  EXPECT_EQ(tr.index("z"), -1);
  for (double t : {0.0, 0.123, 0.77, 1.5, tr.t_last()}) {
    double q, qd, qdd;
    tr.eval(0, t, q, qd, qdd);
    EXPECT_NEAR(q, 2 - t + 0.5 * t * t - 0.25 * t * t * t, 1e-12) << t;
    EXPECT_NEAR(qd, -1 + t - 0.75 * t * t, 1e-11) << t;
    EXPECT_NEAR(qdd, 1 - 1.5 * t, 1e-10) << t;
  }
  std::string p2 = temp("withder.csv");
  {
    std::ofstream f(p2);
    f << "time,a,der(a),der(der(a))\n0,1,2,3\n1,4,5,6\n";
  }
  mbs::rt::Trajectory tb(p2);
  double q, qd, qdd;
  tb.eval(0, 1.0, q, qd, qdd);
  EXPECT_EQ(q, 4);
  EXPECT_EQ(qd, 5);
  EXPECT_EQ(qdd, 6);
}

TEST(Trajectory, BadFilesAreClearErrors) {
  auto message = [&](const std::string& text) {
    std::string path = temp("bad.csv");
    std::ofstream(path) << text;
    try {
      mbs::rt::Trajectory tr(path);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("t,x\n0,1\n1,2\n").find("first column of a trajectory file must be 'time'"),
            std::string::npos);
  EXPECT_NE(message("time,x\n0,1\n0,2\n").find(":3: times must increase"), std::string::npos);
  EXPECT_NE(message("time,x\n0,1\n1,abc\n").find("'abc' in column 'x' is not a finite number"),
            std::string::npos);
  EXPECT_NE(message("time,x\n0,1,2\n").find(":2: 3 fields, the header has 2"), std::string::npos);
  EXPECT_NE(message("time,x,der(x)\n0,1,2\n1,2,3\n").find("give both der(x) and der(der(x))"),
            std::string::npos);
  EXPECT_NE(message("time,x\n0,1\n").find("at least two samples"), std::string::npos);
}

// the slider-crank (invdyn_models.h) with mass on crank and rod; `equations` as the test needs
mbs::testutil::SliderCrank slider_crank(const std::string& equations) {
  mbs::testutil::SliderCrank c("SliderCrankTrajectory", equations);
  c.crank = "m = 0.5, r_cm = {r/2, 0, 0}, I = diag({1e-4, 5e-4, 5e-4})";
  c.rod = "m = 1, r_cm = {l/2, 0, 0}, I = diag({1e-4, 8e-3, 8e-3})";
  return c;
}

std::vector<double> torques(std::shared_ptr<const mbs::rt::CompiledModel> m,
                            const mbs::rt::InverseDynamicsOptions& o, int samples) {
  mbs::rt::InverseDynamics id(m, o);
  const int k_tau = mbs::testutil::inverse_output(id, "pivot.tau");
  std::vector<double> tau;
  mbs::rt::InverseSample s;
  for (int k = 0; k <= samples; ++k) {
    if (!id.sample(k * 1e-3, s)) {
      ADD_FAILURE() << id.message();
      break;
    }
    tau.push_back(s.value[k_tau]);
  }
  return tau;
}

TEST(InverseDynamicsTrajectory, FileGivesTheSameEffortsAsTheEquation) {
  auto with_equation = mbs::testutil::compile_for_inverse(
      "traj_eq", slider_crank("pivot.phi = 1 + 0.5*sin(2*time);").text());
  auto driven = mbs::testutil::compile_for_inverse("traj_file", slider_crank("").text());
  ASSERT_TRUE(with_equation && driven);
  // exact derivatives in the file: the same numbers
  std::string exact = temp("exact.csv"), coarse = temp("coarse.csv");
  {
    std::ofstream f(exact);
    f.precision(17);
    f << "time,pivot.phi,der(pivot.phi),der(der(pivot.phi))\n";
    for (int k = 0; k <= 2000; ++k) {
      double t = k * 1e-3;
      f << t << "," << 1 + 0.5 * std::sin(2 * t) << "," << std::cos(2 * t) << ","
        << -2 * std::sin(2 * t) << "\n";
    }
    std::ofstream g(coarse);
    g.precision(17);
    g << "time,pivot.phi\n";
    for (int k = 0; k <= 200; ++k) {
      double t = k * 1e-2;
      g << t << "," << 1 + 0.5 * std::sin(2 * t) << "\n";
    }
  }
  mbs::rt::InverseDynamicsOptions o;
  auto ref = torques(with_equation, o, 2000);
  o.trajectory = exact;
  auto file = torques(driven, o, 2000);
  o.trajectory = coarse;
  auto spline = torques(driven, o, 2000);
  ASSERT_EQ(ref.size(), 2001u);
  ASSERT_EQ(file.size(), ref.size());
  ASSERT_EQ(spline.size(), ref.size());
  double e_file = 0, e_spline = 0, scale = 0;
  for (size_t k = 0; k < ref.size(); ++k) {
    e_file = std::max(e_file, std::fabs(file[k] - ref[k]));
    e_spline = std::max(e_spline, std::fabs(spline[k] - ref[k]));
    scale = std::max(scale, std::fabs(ref[k]));
  }
  EXPECT_LT(e_file, 1e-10 * scale);
  // a spline through samples 10 ms apart: accelerations to about 1e-4 relative
  EXPECT_LT(e_spline, 1e-3 * scale);
  EXPECT_GT(e_spline, 0.0);  // it is an interpolation, not the exact motion
}

TEST(InverseDynamicsTrajectory, MissingMotionAndWrongColumnsAreErrors) {
  auto driven = mbs::testutil::compile_for_inverse("traj_missing", slider_crank("").text());
  ASSERT_TRUE(driven);
  mbs::rt::InverseDynamicsOptions o;
  auto what = [&]() {
    try {
      mbs::rt::InverseDynamics id(driven, o);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(what().find("'pivot.phi' has no equation"), std::string::npos);
  std::string wrong = temp("wrong.csv");
  std::ofstream(wrong) << "time,pivot.phi,pin.phi\n0,1,0\n1,1,0\n";
  o.trajectory = wrong;
  EXPECT_NE(what().find("column 'pin.phi' is not a prescribed coordinate"), std::string::npos);
}

}  // namespace

namespace {

// Loads logged by "another tool", compared with the balance: the tool's own recovered loads fit
// exactly; a wrong motor torque shows in the balance residual and the distance to the admissible
// solutions; a torque about a passive revolute's axis is not admissible for an ideal joint.
TEST(InverseDynamicsLogged, LoggedLoadsAreCheckedAgainstTheBalance) {
  auto m = mbs::testutil::compile_for_inverse(
      "logged", slider_crank("pivot.phi = 1 + 0.5*sin(2*time);").text());
  ASSERT_TRUE(m);
  const char* cols[] = {"pivot.tau",         "pin.reaction_f[1]", "pin.reaction_f[2]",
                        "pin.reaction_f[3]", "pin.reaction_t[1]", "pin.reaction_t[2]",
                        "pin.reaction_t[3]"};
  mbs::rt::InverseDynamicsOptions o;
  std::vector<std::vector<double>> ref;
  {
    mbs::rt::InverseDynamics id(m, o);
    std::vector<int> idx;
    for (const char* c : cols)
      for (size_t i = 0; i < id.outputs().size(); ++i)
        if (id.outputs()[i].name == c) idx.push_back(static_cast<int>(i));
    ASSERT_EQ(idx.size(), 7u);
    mbs::rt::InverseSample s;
    for (int k = 0; k <= 500; ++k) {
      ASSERT_TRUE(id.sample(k * 1e-3, s)) << id.message();
      std::vector<double> row;
      for (int i : idx) row.push_back(std::isnan(s.value[i]) ? 0.0 : s.value[i]);
      ref.push_back(row);
    }
  }
  auto run = [&](double dtau, double pin_axis_torque) {
    std::string path = temp("log.csv");
    {
      std::ofstream f(path);
      f.precision(17);
      f << "time";
      for (const char* c : cols) f << "," << c;
      f << "\n";
      for (size_t k = 0; k < ref.size(); ++k) {
        f << k * 1e-3;
        for (size_t i = 0; i < 7; ++i)
          f << "," << ref[k][i] + (i == 0 ? dtau : 0.0) + (i == 6 ? pin_axis_torque : 0.0);
        f << "\n";
      }
    }
    mbs::rt::InverseDynamicsOptions lo;
    lo.logged = path;
    lo.t_end = 0.5;
    mbs::rt::InverseDynamics id(m, lo);
    mbs::rt::InverseSample s;
    double bal = 0, adm = 0, dist = 0;
    for (int k = 0; k <= 500; ++k) {
      EXPECT_TRUE(id.sample(k * 1e-3, s)) << id.message();
      bal = std::max(bal, s.logged_balance);
      adm = std::max(adm, s.logged_admissibility);
      dist = std::max(dist, s.logged_distance);
    }
    return std::array<double, 3>{bal, adm, dist};
  };
  auto ok = run(0, 0);
  EXPECT_LT(ok[0], 1e-9);
  EXPECT_LT(ok[1], 1e-9);
  EXPECT_LT(ok[2], 1e-9);
  auto wrong_torque = run(0.01, 0);
  EXPECT_NEAR(wrong_torque[2], 0.01, 1e-9);  // the torque is unique: the log is 0.01 off
  EXPECT_GT(wrong_torque[0], 1e-3);
  EXPECT_LT(wrong_torque[1], 1e-9);  // but an ideal revolute can transmit it
  auto axis = run(0, 0.5);
  EXPECT_NEAR(axis[1], 0.5, 1e-9);  // no ideal passive revolute transmits torque about its axis
  EXPECT_GT(axis[2], 0.1);
}

}  // namespace
