// The model cache (compiler/driver/ModelCache.h) and the model image it stores
// (runtime/model/ModelImage.h): an image read back is the model that was written, to the byte;
// a damaged image is an error, never a crash; a compile of the same inputs is a hit that runs no
// pass and gives the same numbers; a change of any input — the main file, an option, a --set
// value, a library file, a new library file found first — is a miss; a damaged entry is
// reported, deleted and compiled around; warnings are printed again on a hit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "runtime/model/ModelImage.h"

namespace mbs {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

std::vector<fs::path> entries_in(const fs::path& dir, const std::string& suffix) {
  std::vector<fs::path> files;
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == suffix) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string source(const std::string& rel) {
  return std::string(MBS_SOURCE_DIR) + "/" + rel;
}

struct Compiled {
  CompileResult result;
  std::string diagnostics;
};

Compiled compile_with(CompileOptions o) {
  std::ostringstream emit, diag;
  Compiled c;
  c.result = compile(o, emit, diag);
  c.diagnostics = diag.str();
  return c;
}

// Every kernel of `m` evaluated at v0 (and the matrices at nonzero coefficients): the numbers a
// solver would see first.
std::vector<double> kernel_values(const rt::CompiledModel& m) {
  std::vector<double> v = m.v0, all;
  if (m.slot_c_q >= 0) v[m.slot_c_q] = 0.25;
  if (m.slot_c_qd >= 0) v[m.slot_c_qd] = 0.5;
  if (m.slot_c_y >= 0) v[m.slot_c_y] = 0.5;
  rt::for_each_kernel(m, [&](const char*, const rt::Kernel& k) {
    if (k.fn == nullptr) return;
    std::vector<double> out(static_cast<size_t>(k.n_out));
    all.push_back(k(v.data(), out.data()));
    all.insert(all.end(), out.begin(), out.end());
  });
  return all;
}

// bitwise equality, NaN included
bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

class ModelCache : public ::testing::Test {
 protected:
  fs::path base, cache;
  void SetUp() override {
    base = fs::path(testing::TempDir()) /
           ("mbs_model_cache_" + std::to_string(::getpid()) + "_" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(base);
    fs::create_directories(base);
    cache = base / "cache";
  }
  void TearDown() override { fs::remove_all(base); }

  CompileOptions options(const std::string& file) const {
    CompileOptions o;
    o.file = file;
    o.cache_dir = cache.string();
    return o;
  }
};

const char* const kModels[] = {"examples/pendulum.mbs", "examples/van_der_pol.mbs",
                               "examples/mechanics/four_bar.mbs",
                               "examples/mechanics/slider_crank.mbs"};

TEST(ModelImage, AnImageReadBackIsTheModelThatWasWritten) {
  for (const char* rel : kModels) {
    for (int variant = 0; variant < 2; ++variant) {
      SCOPED_TRACE(std::string(rel) + " variant " + std::to_string(variant));
      CompileOptions o;
      o.file = source(rel);
      o.cache_dir = "off";
      o.sensitivities = variant == 1;
      o.inverse_dynamics = variant == 1 && std::string(rel).find("mechanics") != std::string::npos;
      Compiled c = compile_with(o);
      ASSERT_TRUE(c.result.ok) << c.diagnostics;
      const rt::CompiledModel& m = *c.result.model;
      const std::string image = rt::write_model_image(m);
      rt::CompiledModel back;
      ASSERT_EQ(rt::read_model_image(image, back), "");
      EXPECT_EQ(rt::write_model_image(back), image);  // every field, to the byte
      EXPECT_EQ(back.name, m.name);
      EXPECT_EQ(back.output_names, m.output_names);
      EXPECT_EQ(back.newton_matrix.row, m.newton_matrix.row);
      EXPECT_TRUE(same_bits(back.v0, m.v0));
      // the kernels are named, not stored: bound by their symbols they are the same functions
      std::map<std::string, rt::KernelFn> code;
      rt::for_each_kernel(m, [&](const char*, const rt::Kernel& k) {
        if (!k.symbol.empty()) code[k.symbol] = k.fn;
      });
      EXPECT_EQ(rt::bind_kernels(back, [&](const std::string& s) { return code[s]; }), "");
      EXPECT_TRUE(same_bits(kernel_values(back), kernel_values(m)));
      EXPECT_EQ(back.has_sensitivities(), o.sensitivities);
    }
  }
}

TEST(ModelImage, ADamagedImageIsAnErrorNeverACrash) {
  CompileOptions o;
  o.file = source("examples/mechanics/four_bar.mbs");
  o.cache_dir = "off";
  Compiled c = compile_with(o);
  ASSERT_TRUE(c.result.ok) << c.diagnostics;
  const std::string image = rt::write_model_image(*c.result.model);
  // every truncation
  for (size_t n = 0; n < image.size(); ++n) {
    rt::CompiledModel m;
    ASSERT_NE(rt::read_model_image(std::string_view(image).substr(0, n), m), "") << n;
  }
  // an extra byte
  rt::CompiledModel m;
  EXPECT_NE(rt::read_model_image(image + "x", m), "");
  // flipped bits everywhere: an error or a consistent model, never a crash (ASan checks)
  size_t refused = 0;
  for (size_t at = 0; at < image.size(); at += 7) {
    std::string bad = image;
    bad[at] = static_cast<char>(bad[at] ^ 0x40);
    rt::CompiledModel x;
    if (!rt::read_model_image(bad, x).empty()) ++refused;
  }
  EXPECT_GT(refused, 0u);
  // a length field made huge does not allocate it
  std::string huge = image;
  for (int i = 0; i < 8; ++i) huge[14 + i] = static_cast<char>(0xff);  // the name's length
  EXPECT_NE(rt::read_model_image(huge, m), "");
  EXPECT_NE(rt::read_model_image("not an image", m), "");
  std::string other_version = image;
  other_version[10] = static_cast<char>(other_version[10] + 1);
  EXPECT_NE(rt::read_model_image(other_version, m).find("format version"), std::string::npos);
}

TEST_F(ModelCache, ASecondCompileIsAHitThatRunsNoPassAndGivesTheSameNumbers) {
  for (const char* rel : kModels) {
    SCOPED_TRACE(rel);
    Compiled cold = compile_with(options(source(rel)));
    ASSERT_TRUE(cold.result.ok) << cold.diagnostics;
    EXPECT_FALSE(cold.result.model_cache_hit);
    Compiled warm = compile_with(options(source(rel)));
    ASSERT_TRUE(warm.result.ok) << warm.diagnostics;
    EXPECT_TRUE(warm.result.model_cache_hit);
    ASSERT_EQ(warm.result.timings.size(), 1u);
    EXPECT_EQ(warm.result.timings[0].pass, "cache");
    EXPECT_EQ(warm.diagnostics, cold.diagnostics);
    EXPECT_EQ(rt::write_model_image(*warm.result.model), rt::write_model_image(*cold.result.model));
    EXPECT_TRUE(same_bits(kernel_values(*warm.result.model), kernel_values(*cold.result.model)));
    EXPECT_EQ(warm.result.kernel_sizes.size(), cold.result.kernel_sizes.size());
  }
  EXPECT_EQ(entries_in(cache, ".model").size(), std::size(kModels));
}

TEST_F(ModelCache, AModelWithTopLevelInputsIsAHitWithTheSameInputs) {
  const fs::path file = base / "lag.mbs";
  spit(file,
       "model Lag\n  input Real u(start = 1, unit = \"N\");\n  input Real w = 2;\n"
       "  Real x(start = 0);\nequation\n  der(x) = -x + u * w;\nend Lag;\n");
  Compiled cold = compile_with(options(file.string()));
  ASSERT_TRUE(cold.result.ok) << cold.diagnostics;
  Compiled warm = compile_with(options(file.string()));
  ASSERT_TRUE(warm.result.ok) << warm.diagnostics;
  EXPECT_TRUE(warm.result.model_cache_hit);
  const rt::CompiledModel& a = *cold.result.model;
  const rt::CompiledModel& b = *warm.result.model;
  ASSERT_EQ(b.inputs.size(), 2u);
  EXPECT_EQ(b.inputs[1].name, "w");
  EXPECT_EQ(b.inputs[0].source.line, a.inputs[0].source.line);
  EXPECT_EQ(b.input_slot, a.input_slot);
  EXPECT_EQ(b.v0[static_cast<size_t>(b.input_slot[1])], 2.0);
  EXPECT_EQ(rt::write_model_image(b), rt::write_model_image(a));
  EXPECT_TRUE(same_bits(kernel_values(b), kernel_values(a)));
}

TEST_F(ModelCache, AChangeOfAnyInputIsAMiss) {
  const fs::path lib = base / "lib", lib_first = base / "lib_first";
  fs::create_directories(lib);
  fs::create_directories(lib_first);
  spit(lib / "Springs.mbs",
       "package Springs\n  model Spring\n    parameter Real k = 2;\n    Real x(start = 1);\n"
       "    Real v;\n  equation\n    der(x) = v;\n    der(v) = -k * x;\n  end Spring;\n"
       "end Springs;\n");
  const fs::path main = base / "main.mbs";
  const std::string text = "model M\n  Springs.Spring s;\nend M;\n";
  spit(main, text);
  CompileOptions o = options(main.string());
  o.include_dirs = {lib_first.string(), lib.string()};
  auto hit = [&](const CompileOptions& opts) {
    Compiled c = compile_with(opts);
    EXPECT_TRUE(c.result.ok) << c.diagnostics;
    return c.result.model_cache_hit;
  };
  auto k_of = [&](const CompileOptions& opts) {
    Compiled c = compile_with(opts);
    const rt::CompiledModel& m = *c.result.model;
    for (size_t i = 0; i < m.parameters.size(); ++i)
      if (m.parameters[i].name == "s.k") return m.v0[m.parameter_slot[i]];
    return -1.0;
  };
  EXPECT_FALSE(hit(o));
  EXPECT_TRUE(hit(o));
  // options and values
  CompileOptions other = o;
  other.overrides["s.k"] = 3;
  EXPECT_FALSE(hit(other));
  EXPECT_EQ(k_of(other), 3.0);
  EXPECT_TRUE(hit(other));
  other = o;
  other.start_overrides["s.x"] = 0.5;
  EXPECT_FALSE(hit(other));
  other = o;
  other.opt_level = 1;
  EXPECT_FALSE(hit(other));
  other = o;
  other.sensitivities = true;
  EXPECT_FALSE(hit(other));
  EXPECT_TRUE(hit(o));
  // the main file's text
  spit(main, text + "\n// a comment\n");
  EXPECT_FALSE(hit(o));
  EXPECT_TRUE(hit(o));
  // a library file's text
  spit(lib / "Springs.mbs", std::string(slurp(lib / "Springs.mbs"))
                                .replace(slurp(lib / "Springs.mbs").find("k = 2"), 5, "k = 5"));
  EXPECT_FALSE(hit(o));
  EXPECT_EQ(k_of(o), 5.0);
  // a new library file that is now found first
  spit(lib_first / "Springs.mbs",
       std::string(slurp(lib / "Springs.mbs"))
           .replace(slurp(lib / "Springs.mbs").find("k = 5"), 5, "k = 7"));
  EXPECT_FALSE(hit(o));
  EXPECT_EQ(k_of(o), 7.0);
  // ... and gone again
  fs::remove(lib_first / "Springs.mbs");
  EXPECT_FALSE(hit(o));
  EXPECT_EQ(k_of(o), 5.0);
  // no cache: never a hit, nothing written
  CompileOptions off = o;
  off.cache_dir = "off";
  EXPECT_FALSE(hit(off));
}

TEST_F(ModelCache, ADamagedEntryIsReportedDeletedAndCompiledAround) {
  const std::string file = source("examples/mechanics/four_bar.mbs");
  Compiled cold = compile_with(options(file));
  ASSERT_TRUE(cold.result.ok) << cold.diagnostics;
  const std::vector<double> expected = kernel_values(*cold.result.model);
  const std::vector<fs::path> entries = entries_in(cache, ".model");
  ASSERT_EQ(entries.size(), 1u);
  const std::string good = slurp(entries[0]);
  const size_t n = good.size();
  auto flip = [&](size_t at) {
    std::string s = good;
    s[at] = static_cast<char>(s[at] ^ 0x10);
    return s;
  };
  const std::vector<std::pair<std::string, std::string>> damages = {
      {"a bit in the header", flip(3)},
      {"a bit in the key", flip(20)},
      {"a bit in the payload", flip(n / 2)},
      {"the last byte", flip(n - 1)},
      {"truncated", good.substr(0, n / 3)},
      {"empty", ""},
      {"an object cache entry", slurp(entries_in(cache, ".o").at(0))},
  };
  for (const auto& [what, bytes] : damages) {
    SCOPED_TRACE(what);
    spit(entries[0], bytes);
    Compiled c = compile_with(options(file));
    ASSERT_TRUE(c.result.ok) << c.diagnostics;
    EXPECT_FALSE(c.result.model_cache_hit);
    EXPECT_NE(c.diagnostics.find("warning: model cache entry '" + entries[0].string() +
                                 "' was damaged ("),
              std::string::npos)
        << c.diagnostics;
    EXPECT_TRUE(same_bits(kernel_values(*c.result.model), expected));
    EXPECT_TRUE(slurp(entries[0]) == good);  // written whole again
  }
  Compiled again = compile_with(options(file));
  EXPECT_TRUE(again.result.model_cache_hit);
  EXPECT_EQ(again.diagnostics, cold.diagnostics);  // the model's warning, not the damage
}

TEST_F(ModelCache, WarningsArePrintedAgainOnAHit) {
  const std::string file = source("tests/diagnostics/fail_mech_redundant.mbs");
  Compiled cold = compile_with(options(file));
  ASSERT_TRUE(cold.result.ok) << cold.diagnostics;
  ASSERT_NE(cold.diagnostics.find("warning:"), std::string::npos);
  Compiled warm = compile_with(options(file));
  EXPECT_TRUE(warm.result.model_cache_hit);
  EXPECT_EQ(warm.diagnostics, cold.diagnostics);
  EXPECT_EQ(warm.result.diagnostic_kinds, cold.result.diagnostic_kinds);
}

// The note of a planar loop is printed with -v only: on a hit as on the compile that stored it.
TEST_F(ModelCache, NotesShownOnlyWithVerboseArePrintedAgainOnAHitWithVerbose) {
  const std::string file = source("tests/diagnostics/fail_mech_redundant.mbs");
  const std::string note = "note: the loop closed by 'jC' moves in a plane";
  Compiled cold = compile_with(options(file));
  ASSERT_TRUE(cold.result.ok) << cold.diagnostics;
  EXPECT_EQ(cold.diagnostics.find(note), std::string::npos) << cold.diagnostics;
  CompileOptions verbose = options(file);
  verbose.verbose = true;
  Compiled hit = compile_with(verbose);
  EXPECT_TRUE(hit.result.model_cache_hit);
  EXPECT_NE(hit.diagnostics.find(note), std::string::npos) << hit.diagnostics;
  Compiled quiet = compile_with(options(file));
  EXPECT_TRUE(quiet.result.model_cache_hit);
  EXPECT_EQ(quiet.diagnostics, cold.diagnostics);
}

TEST_F(ModelCache, ErrorsAndEmitsAreNeverCached) {
  const fs::path main = base / "bad.mbs";
  spit(main, "model M\n  Real x(start = 1);\nequation\n  der(x) = y;\nend M;\n");
  for (int i = 0; i < 2; ++i) {
    Compiled c = compile_with(options(main.string()));
    EXPECT_FALSE(c.result.ok);
    EXPECT_NE(c.diagnostics.find("error:"), std::string::npos);
  }
  CompileOptions o = options(source("examples/pendulum.mbs"));
  o.emit = "dae";
  std::ostringstream emit, diag;
  EXPECT_TRUE(compile(o, emit, diag).ok);
  EXPECT_TRUE(entries_in(cache, ".model").empty());
}

}  // namespace
}  // namespace mbs
