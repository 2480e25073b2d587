// Models and closed forms shared by the inverse-dynamics tests (test_invdyn*.cpp, test_cli.cpp):
// one slider-crank text with the variations the tests need, the redundant parallelogram, the
// slider's closed-form kinematics, and helpers to compile for inverse dynamics and find outputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include "mech_test_util.h"
#include "runtime/invdyn/InverseDynamics.h"

namespace mbs::testutil {

inline std::shared_ptr<const rt::CompiledModel> compile_for_inverse(const std::string& name,
                                                                    const std::string& text) {
  CompileOptions o;
  o.inverse_dynamics = true;
  return compile_source(name, text, o);
}

// The index of output `name` of an inverse-dynamics run (fails the test and returns 0 if none).
inline int inverse_output(const rt::InverseDynamics& id, const std::string& name) {
  for (size_t i = 0; i < id.outputs().size(); ++i)
    if (id.outputs()[i].name == name) return static_cast<int>(i);
  ADD_FAILURE() << "no output " << name;
  return 0;
}

// A file of the source tree (examples/...), whole.
inline std::string source_file(const std::string& relative) {
  std::ifstream in(std::string(MBS_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(in) << relative;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A slider-crank in the x-y plane, gravity along -y: a crank of radius r = 0.1 on the prescribed
// Revolute `pivot` (phi starts at 1), a rod of length l, a slider (Body `slider`, on the passive
// Prismatic `slide` along world x, the loop's cut) joined to the rod by the Revolute `wrist`.
struct SliderCrank {
  SliderCrank(std::string model_name, std::string model_equations)
      : name(std::move(model_name)), equations(std::move(model_equations)) {}
  std::string name;
  std::string l = "0.3";
  std::string slide_start = "0.35";  // s(start = ...) of the slider
  // the three Bodies' modifiers: by default crank and rod without mass, a 2 kg point slider
  std::string crank = "m = 0, r_cm = {r/2, 0, 0}, I = zeros(3, 3)";
  std::string rod = "m = 0, r_cm = {l/2, 0, 0}, I = zeros(3, 3)";
  std::string slider = "m = 2, I = zeros(3, 3)";
  bool sensor = false;       // a CutForceTorque `sensor` (world axes) between wrist and slider
  std::string declarations;  // more declarations
  std::string equations;     // equations, e.g. "pivot.phi = 1 + 2*time;" ("": a trajectory)

  std::string text() const {
    std::string t = "model " + name + R"(
  import Mechanics.*;
  parameter Real r = 0.1;
  parameter Real l = )" +
                    l + R"(;
  World world(g = {0, -9.81, 0});
  Revolute pivot(prescribed = true, phi(start = 1));
  Body crank()" + crank +
                    R"();
  FixedTranslation arm(r = {r, 0, 0});
  Revolute pin(phi(start = -1.2));
  Body rod()" + rod +
                    R"();
  FixedTranslation rodEnd(r = {l, 0, 0});
  Revolute wrist;
  Prismatic slide(n = {1, 0, 0}, s(start = )" +
                    slide_start + R"());
  Body slider()" + slider +
                    ");\n";
    if (sensor) t += "  CutForceTorque sensor(resolve = 3);\n";
    t += declarations + R"(
equation
  connect(world.frame, pivot.frame_a);   connect(pivot.frame_b, crank.frame_a);
  connect(crank.frame_a, arm.frame_a);   connect(arm.frame_b, pin.frame_a);
  connect(pin.frame_b, rod.frame_a);     connect(rod.frame_a, rodEnd.frame_a);
  connect(rodEnd.frame_b, wrist.frame_a);
  connect(world.frame, slide.frame_a);   connect(slide.frame_b, slider.frame_a);
)";
    t +=
        sensor
            ? "  connect(wrist.frame_b, sensor.frame_a); connect(sensor.frame_b, slider.frame_a);\n"
            : "  connect(wrist.frame_b, slider.frame_a);\n";
    return t + "  " + equations + "\nend " + name + ";\n";
  }
};

// The slider's position x = r cos(phi) + sqrt(l^2 - r^2 sin^2 phi) and its first and second
// derivatives by phi. With phi' = w constant and massless crank and rod, the crank torque is
// m x'' dx/dphi = m w^2 d2x dx (virtual work) and the rod's force on the slider along x m w^2 d2x.
struct SliderX {
  double x, dx, d2x;
};
inline SliderX slider_x(double r, double l, double phi) {
  const double s = std::sin(phi), c = std::cos(phi), D = std::sqrt(l * l - r * r * s * s);
  return {r * c + D, -r * s - r * r * s * c / D,
          -r * c - r * r * (c * c - s * s) / D - std::pow(r, 4) * s * s * c * c / (D * D * D)};
}

// A parallelogram with a third crank (redundant): three cranks of length 1 on one coupler; the
// axial forces of the cranks are not determined, the motor torque jA.tau is.
inline const char* kParallelogram = R"(
model ParallelogramID
  import Mechanics.*;
  World world(g = {0, -9.81, 0});
  Revolute jA(prescribed = true, phi(start = 1.0));
  FixedTranslation crankA(r = {1, 0, 0});
  Body bA(m = 1, r_cm = {0.5, 0, 0}, I = zeros(3, 3));
  Revolute cA(phi(start = -1.0));
  FixedTranslation coupler(r = {2, 0, 0});
  Body bC(m = 3, r_cm = {1, 0, 0});
  FixedTranslation ground(r = {2, 0, 0});
  Revolute jB(phi(start = 1.0));
  FixedTranslation crankB(r = {1, 0, 0});
  Body bB(m = 1, r_cm = {0.5, 0, 0}, I = zeros(3, 3));
  Revolute cB(cut = true);
  FixedTranslation ground2(r = {1, 0, 0});
  Revolute jM(phi(start = 1.0));
  FixedTranslation crankM(r = {1, 0, 0});
  Body bM(m = 1, r_cm = {0.5, 0, 0}, I = zeros(3, 3));
  FixedTranslation mid(r = {1, 0, 0});
  Revolute cM(cut = true);
equation
  connect(world.frame, jA.frame_a);      connect(jA.frame_b, crankA.frame_a);
  connect(jA.frame_b, bA.frame_a);       connect(crankA.frame_b, cA.frame_a);
  connect(cA.frame_b, coupler.frame_a);  connect(cA.frame_b, bC.frame_a);
  connect(world.frame, ground.frame_a);  connect(ground.frame_b, jB.frame_a);
  connect(jB.frame_b, crankB.frame_a);   connect(jB.frame_b, bB.frame_a);
  connect(crankB.frame_b, cB.frame_a);   connect(coupler.frame_b, cB.frame_b);
  connect(world.frame, ground2.frame_a); connect(ground2.frame_b, jM.frame_a);
  connect(jM.frame_b, crankM.frame_a);   connect(jM.frame_b, bM.frame_a);
  connect(crankM.frame_b, cM.frame_a);   connect(cA.frame_b, mid.frame_a);
  connect(mid.frame_b, cM.frame_b);
  jA.phi = 1.0 + 0.3*sin(2*time);
end ParallelogramID;
)";

}  // namespace mbs::testutil
