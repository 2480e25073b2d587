// The table of joint kinds (compiler/mech/JointKinds.h) against the library that declares the
// joints (stdlib/Mechanics.mbs): every kind of the table is an element of the library
// (annotation __mbs_element) and declares every member the table names (coordinates, velocities,
// efforts, axes, springs), and every joint element of the library has a row in the table.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "compiler/mech/JointKinds.h"

namespace mbs::mech {
namespace {

std::string library_text() {
  std::ifstream in(std::string(MBS_SOURCE_DIR) + "/stdlib/Mechanics.mbs");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The text of `model <name> ... end <name>;` in the library ("" if none).
std::string model_text(const std::string& lib, const std::string& name) {
  const size_t at = lib.find("model " + name + " ");
  if (at == std::string::npos) return {};
  const size_t end = lib.find("end " + name + ";", at);
  return end == std::string::npos ? std::string() : lib.substr(at, end - at);
}

// Does the model declare a variable or parameter of this name (an array for "Q[1]")?
bool declares(const std::string& model, std::string member) {
  if (const size_t b = member.find('['); b != std::string::npos) member = member.substr(0, b);
  for (const std::string& form :
       {" " + member + "(", " " + member + "[", " " + member + ";", " " + member + " ="})
    if (model.find(form) != std::string::npos) return true;
  return false;
}

const char* kAllKinds[] = {"FixedTranslation", "FixedRotation", "Weld",      "CutForceTorque",
                           "LoopClosure",      "Revolute",      "Prismatic", "Cylindrical",
                           "Universal",        "Planar",        "Spherical", "FreeMotion"};

TEST(JointKinds, EveryRowMatchesTheLibrary) {
  const std::string lib = library_text();
  ASSERT_FALSE(lib.empty());
  for (const char* name : kAllKinds) {
    const JointKind* k = joint_kind(name);
    ASSERT_NE(k, nullptr) << name;
    const std::string m = model_text(lib, name);
    ASSERT_FALSE(m.empty()) << name << " is not a model of stdlib/Mechanics.mbs";
    EXPECT_NE(m.find("__mbs_element = \"" + std::string(name) + "\""), std::string::npos) << name;
    for (const JointCoordinate& c : k->coordinates) {
      EXPECT_TRUE(declares(m, c.coord)) << name << "." << c.coord;
      EXPECT_TRUE(declares(m, c.velocity)) << name << "." << c.velocity;
      if (c.effort != nullptr) {
        EXPECT_TRUE(declares(m, c.effort)) << name << "." << c.effort;
        // a coordinate with an effort has a spring, a damper and a rest position
        for (const std::string& p : {"c_" + std::string(c.coord), "d_" + std::string(c.coord),
                                     std::string(c.coord) + "_rest"})
          EXPECT_TRUE(declares(m, p)) << name << "." << p;
      }
      if (c.motion == Motion::Rotation) {
        EXPECT_NE(c.angle, AngleFrom::None) << name;
      }
    }
    if (k->given_force) {
      EXPECT_TRUE(declares(m, "f")) << name;
    }
    if (k->given_torque) {
      EXPECT_TRUE(declares(m, "t")) << name;
    }
    if (k->perpendicular_a != nullptr) {
      EXPECT_TRUE(declares(m, k->perpendicular_a)) << name;
      EXPECT_TRUE(declares(m, k->perpendicular_b)) << name;
    }
    if (k->quaternion_offset() >= 0) {
      // four consecutive parts, the last coordinates of the joint
      EXPECT_EQ(k->coordinates.size() - static_cast<size_t>(k->quaternion_offset()), 4u) << name;
    }
    // rigid connections have no coordinates; joints have some (LoopClosure: always cut)
    EXPECT_EQ(k->rigid() || k->always_cut, k->coordinates.empty()) << name;
  }
}

TEST(JointKinds, EveryJointOfTheLibraryHasARow) {
  const std::string lib = library_text();
  std::set<std::string> table(std::begin(kAllKinds), std::end(kAllKinds));
  // every element annotated in the library that has frame_a and frame_b and is not a force
  // element or a sensor is a joint
  const std::string key = "annotation(__mbs_element = \"";
  for (size_t at = lib.find(key); at != std::string::npos; at = lib.find(key, at + 1)) {
    const size_t start = at + key.size();
    const std::string kind = lib.substr(start, lib.find('"', start) - start);
    if (kind.empty() || !std::isalpha(static_cast<unsigned char>(kind[0]))) continue;  // prose
    if (joint_kind(kind) != nullptr) {
      EXPECT_TRUE(table.count(kind)) << kind << " is in the table but not in this test";
      continue;
    }
    static const std::set<std::string> others = {
        "World",      "Body",        "Frame",          "LineForce",       "WorldForce",
        "FrameForce", "FrameSensor", "DistanceSensor", "FrameKinematics", "FixedShape"};
    EXPECT_TRUE(others.count(kind)) << kind
                                    << " is neither a joint of the table nor a known "
                                       "non-joint element";
  }
  EXPECT_EQ(joint_kind("NoSuchJoint"), nullptr);
}

}  // namespace
}  // namespace mbs::mech
