// mbsc --animate (docs/animation.md): the files it writes, the result file without the poses,
// the frames of a run with events, and the usage errors found before the compile (an unknown
// --animate-show name: test_animation, Animation.UnknownShownVariableIsAnError).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "cli_test_util.h"

namespace mbs {
namespace {

using clitest::mbsc;
using clitest::read_csv;
using clitest::slurp;
using clitest::tmp;

// A body that falls from 1 m on a prismatic joint and bounces at s = 0: one event in the first
// second (at sqrt(2/g) = 0.4516 s; the next one at 1.17 s).
const char* kBouncer = R"(model Bouncer
  import Mechanics.*;
  World world;
  Prismatic p(n = {0, 1, 0}, s(start = 1, fixed = true), v(start = 0, fixed = true));
  Body b(m = 1);
equation
  connect(world.frame, p.frame_a);
  connect(p.frame_b, b.frame_a);
  when p.s < 0 then
    reinit(p.v, -0.8*pre(p.v));
  end when;
end Bouncer;
)";

TEST(CliAnimate, GlbAndHtmlOfTheBouncerKeepTheEventAndLeaveTheCsvAlone) {
  const std::string model = tmp("bouncer.mbs"), csv = tmp("bouncer.csv"), glb = tmp("b.glb");
  std::ofstream(model) << kBouncer;
  auto r = mbsc("'" + model + "' --simulate --t-end 1 --output '" + csv + "' --animate '" + glb +
                "' --no-cache");
  ASSERT_EQ(r.code, 0) << r.err;
  // 0, 1/60, ..., 1 s: 61 frames, and the rows before and after the one event
  EXPECT_NE(r.err.find(" 63 time frames written"), std::string::npos) << r.err;
  const std::string b = slurp(glb);
  ASSERT_GT(b.size(), 20u);
  EXPECT_EQ(b.substr(0, 4), "glTF");
  const auto rows = read_csv(csv);
  ASSERT_FALSE(rows.empty());
  for (const auto& name : rows[0]) EXPECT_EQ(name.find("shape_"), std::string::npos) << name;
  // exactly one event: two rows at one time
  int pairs = 0;
  for (size_t i = 2; i < rows.size(); ++i) pairs += rows[i][0] == rows[i - 1][0];
  EXPECT_EQ(pairs, 1);
}

// --static --animate: every load step is a frame.
TEST(CliAnimate, StaticLoadStepsAreTheFrames) {
  const std::string csv = tmp("sag_static.csv"), glb = tmp("sag.glb");
  auto r = mbsc("examples/mechanics/sagging_arm.mbs --static --output '" + csv + "' --animate '" +
                glb + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rows = read_csv(csv);
  ASSERT_GE(rows.size(), 2u);
  EXPECT_NE(r.err.find(" " + std::to_string(rows.size() - 1) + " load frames written"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(slurp(glb).substr(0, 4), "glTF");
}

// mbsc animate RESULT.csv --model FILE.mbs: the poses computed again from the coordinates in
// the result file are those the run recorded (the file's numbers read back exactly), so the two
// glTF files are the same; a file without the model's coordinates says which it lacks.
TEST(CliAnimate, ResultFileReplaysToTheRunsAnimation) {
  const std::string csv = tmp("fb.csv"), direct = tmp("fb_direct.gltf"),
                    replay = tmp("fb_replay.gltf");
  auto r = mbsc("examples/mechanics/four_bar.mbs --simulate --t-end 0.2 --output '" + csv +
                "' --animate '" + direct + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  r = mbsc("animate '" + csv + "' --model examples/mechanics/four_bar.mbs --output '" + replay +
           "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string a = slurp(direct), b = slurp(replay);
  EXPECT_GT(a.size(), 1000u);
  EXPECT_TRUE(a == b);
  r = mbsc("animate '" + csv + "' --model examples/mechanics/pendulum.mbs --output '" +
           tmp("x.glb") + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("lacks 1 column the poses need (the model's coordinates): j.phi"),
            std::string::npos)
      << r.err;
}

// --inverse-dynamics --animate: the prescribed motion, from the coordinates of its result file
// (frames at 60 per second from 0 to 0.5 s: 31).
TEST(CliAnimate, InverseDynamicsDrawsThePrescribedMotion) {
  const std::string csv = tmp("hm_inv.csv"), glb = tmp("hm_inv.glb");
  auto r = mbsc(
      "examples/mechanics/hybrid_manipulator.mbs --inverse-dynamics --t-end 0.5 --step 0.01 "
      "--output '" +
      csv + "' --animate '" + glb + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find(" 31 time frames written to"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(glb).substr(0, 4), "glTF");
}

TEST(CliAnimate, UsageErrors) {
  auto r = mbsc("examples/mechanics/pendulum.mbs --simulate --animate out.png");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(".html"), std::string::npos) << r.err;
  r = mbsc("examples/mechanics/pendulum.mbs --animate '" + tmp("p.glb") + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--simulate"), std::string::npos) << r.err;
  r = mbsc("examples/mechanics/pendulum.mbs --simulate --animate-fps 30");
  EXPECT_EQ(r.code, 2);
  // an HTML page without three.js: says what to install
  r = mbsc("examples/mechanics/pendulum.mbs --simulate --animate '" + tmp("p.html") + "'",
           "MBS_THREE_DIR=/nonexistent ");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("libjs-three"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mbs
