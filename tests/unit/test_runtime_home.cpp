// Where an installed or built mbs finds its standard library and FMU runtime
// (runtime/io/Home.h): relative to the binary, with MBS_HOME as the override.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/io/Home.h"

namespace {

namespace fs = std::filesystem;
using mbs::rt::find_install_home;

struct TempTree {
  fs::path root;
  TempTree() {
    root = fs::path(testing::TempDir()) / ("home_" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
  }
  ~TempTree() { fs::remove_all(root); }
};

TEST(RuntimeHome, AnInstallIsTheFolderAboveTheBinary) {
  TempTree t;
  fs::create_directories(t.root / "opt/mbs/bin");
  fs::create_directories(t.root / "opt/mbs/share/mbs/stdlib");
  const auto h = find_install_home((t.root / "opt/mbs/bin/mbsc").string(), nullptr);
  EXPECT_EQ(h.root, (t.root / "opt/mbs").string());
  EXPECT_EQ(h.stdlib_dir(), (t.root / "opt/mbs/share/mbs/stdlib").string());
  EXPECT_EQ(h.fmu_runtime(), (t.root / "opt/mbs/lib/mbs/mbs_fmu_runtime.o").string());
}

TEST(RuntimeHome, TheBuildTreeIsTheBinarysOwnFolder) {
  TempTree t;
  fs::create_directories(t.root / "build/ci/share/mbs");
  const auto h = find_install_home((t.root / "build/ci/mbsc").string(), nullptr);
  EXPECT_EQ(h.root, (t.root / "build/ci").string());
}

// The Python module (docs/python.md): build/<preset>/python/mbs/_mbs*.so in the build tree,
// <prefix>/lib/python3/dist-packages/mbs/_mbs*.so in an install.
TEST(RuntimeHome, ThePythonModuleFindsTheBuildTreeAndTheInstallAboveIt) {
  TempTree t;
  fs::create_directories(t.root / "build/ci/share/mbs");
  fs::create_directories(t.root / "build/ci/python/mbs");
  EXPECT_EQ(find_install_home((t.root / "build/ci/python/mbs/_mbs.so").string(), nullptr).root,
            (t.root / "build/ci").string());
  fs::create_directories(t.root / "usr/share/mbs");
  EXPECT_EQ(
      find_install_home((t.root / "usr/lib/python3/dist-packages/mbs/_mbs.cpython-311.so").string(),
                        nullptr)
          .root,
      (t.root / "usr").string());
}

TEST(RuntimeHome, MbsHomeOverridesAndNothingFoundSaysWhereItLooked) {
  TempTree t;
  fs::create_directories(t.root / "opt/mbs/share/mbs");
  auto h = find_install_home((t.root / "opt/mbs/bin/mbsc").string(), "/elsewhere/mbs/");
  EXPECT_EQ(h.root, "/elsewhere/mbs");
  EXPECT_TRUE(h.from_mbs_home);
  EXPECT_NE(h.explain().find("MBS_HOME is /elsewhere/mbs"), std::string::npos);
  // an empty MBS_HOME is unset
  EXPECT_EQ(find_install_home((t.root / "opt/mbs/bin/mbsc").string(), "").root,
            (t.root / "opt/mbs").string());
  h = find_install_home((t.root / "nowhere/bin/mbsc").string(), nullptr);
  EXPECT_TRUE(h.root.empty());
  EXPECT_TRUE(h.stdlib_dir().empty());
  EXPECT_NE(h.explain().find((t.root / "nowhere").string()), std::string::npos) << h.explain();
  EXPECT_NE(h.explain().find("set MBS_HOME"), std::string::npos) << h.explain();
}

// This test program lies in build/<preset>/tests/: it finds the build tree's layout, whose
// standard library is the source's.
TEST(RuntimeHome, ThisBuildFindsItsStandardLibraryAndFmuRuntime) {
  if (std::getenv("MBS_HOME") != nullptr) GTEST_SKIP() << "MBS_HOME is set";
  const auto& h = mbs::rt::install_home();
  ASSERT_FALSE(h.root.empty()) << h.explain();
  EXPECT_TRUE(fs::exists(fs::path(h.stdlib_dir()) / "Mechanics.mbs")) << h.stdlib_dir();
  EXPECT_TRUE(fs::exists(h.fmu_runtime())) << h.fmu_runtime();
  EXPECT_EQ(fs::canonical(h.stdlib_dir()), fs::canonical(fs::path(MBS_SOURCE_DIR) / "stdlib"));
  EXPECT_EQ(fs::path(mbs::rt::this_binary_path()).filename(), "test_runtime_home");
}

}  // namespace
