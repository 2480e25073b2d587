// Tests of the pieces of FMU export (tools/fmu/Export.h): the embedding object carries the model
// image, the configuration and a kernel table whose code gives the JIT's results bit for bit in a
// linked library; the .fmu archive round-trips and is written atomically; kernels compiled for a
// named CPU; clear refusals (model exchange of a constrained model, an unknown CPU, an unknown
// output).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "runtime/model/ModelImage.h"
#include "tests/unit/mech_test_util.h"
#include "tools/fmu/Archive.h"
#include "tools/fmu/Embed.h"
#include "tools/fmu/Export.h"
#include "tools/fmu/Link.h"

namespace mbs::fmu {
namespace {

namespace fs = std::filesystem;

const char* kOscillator = R"(model Oscillator
  parameter Real k = 4 "stiffness";
  parameter Real d = 0.1;
  Real x(start = 1);
  output Real v;
equation
  v = der(x);
  der(v) = -k*x - d*v + sin(time);
end Oscillator;
)";

const char* kCartesianPendulum = R"(model CartesianPendulum
  parameter Real L = 1;
  Real x(start = 1), y(start = 0), lambda;
equation
  der(der(x)) = -x*lambda;
  der(der(y)) = -y*lambda - 9.81;
  x^2 + y^2 = L^2;
end CartesianPendulum;
)";

CompileResult compile_for_export(const std::string& name, const std::string& text,
                                 const std::string& cpu = kDefaultFmuCpu) {
  CompileOptions o;
  o.file = testutil::temp_path(name + ".mbs");
  std::ofstream(o.file) << text;
  o.cache_dir = "off";
  o.cpu = cpu;
  o.keep_object_files = true;
  std::ostringstream emit, diag;
  CompileResult r = compile(o, emit, diag);
  EXPECT_TRUE(r.ok) << diag.str();
  return r;
}

std::set<std::string> kernel_symbols(const rt::CompiledModel& m) {
  std::set<std::string> s;
  rt::for_each_kernel(m, [&](const char*, const rt::Kernel& k) {
    if (!k.symbol.empty()) s.insert(k.symbol);
  });
  return s;
}

struct KernelEntry {
  const char* symbol;
  int32_t (*fn)(const double*, double*);
};

TEST(FmuExport, EmbeddingObjectCarriesModelConfigAndKernels) {
  CompileResult r = compile_for_export("embed_osc", kOscillator);
  ASSERT_TRUE(r.model);
  ASSERT_FALSE(r.object_files.empty());
  const rt::CompiledModel& m = *r.model;
  const std::string image = rt::write_model_image(m);
  const std::string config = "mbs-fmu-config 1\nmodel_identifier Oscillator\n";
  const std::set<std::string> symbols = kernel_symbols(m);
  std::string error;
  std::string embed =
      embedding_object(image, config, std::vector<std::string>(symbols.begin(), symbols.end()),
                       kDefaultFmuCpu, &error);
  ASSERT_FALSE(embed.empty()) << error;

  const std::string so = testutil::temp_path("embed_osc.so");
  std::vector<std::string> objects = r.object_files;
  objects.push_back(embed);
  ASSERT_EQ(link_shared_library(objects,
                                {"mbs_fmu_model_image", "mbs_fmu_model_image_size",
                                 "mbs_fmu_config", "mbs_fmu_kernels", "mbs_fmu_kernel_count"},
                                so),
            "");
  void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  const auto* image_bytes = static_cast<const unsigned char*>(dlsym(lib, "mbs_fmu_model_image"));
  const auto* image_size = static_cast<const uint64_t*>(dlsym(lib, "mbs_fmu_model_image_size"));
  const auto* config_text = static_cast<const char*>(dlsym(lib, "mbs_fmu_config"));
  const auto* table = static_cast<const KernelEntry*>(dlsym(lib, "mbs_fmu_kernels"));
  const auto* count = static_cast<const uint64_t*>(dlsym(lib, "mbs_fmu_kernel_count"));
  ASSERT_TRUE(image_bytes && image_size && config_text && table && count);
  ASSERT_EQ(*image_size, image.size());
  EXPECT_EQ(std::memcmp(image_bytes, image.data(), image.size()), 0);
  EXPECT_EQ(std::string(config_text), config);
  ASSERT_EQ(*count, symbols.size());

  // the model read back from the library's image, its kernels bound through the library's
  // table, gives the JIT's values bit for bit (the same object code)
  rt::CompiledModel loaded;
  ASSERT_EQ(rt::read_model_image(
                std::string_view(reinterpret_cast<const char*>(image_bytes), *image_size), loaded),
            "");
  ASSERT_EQ(rt::bind_kernels(loaded,
                             [&](const std::string& s) -> rt::KernelFn {
                               for (uint64_t i = 0; i < *count; ++i)
                                 if (s == table[i].symbol) return table[i].fn;
                               return nullptr;
                             }),
            "");
  std::vector<double> v = m.v0;
  v[static_cast<size_t>(m.q_slot[0])] = 0.3;
  v[static_cast<size_t>(m.qd_slot[0])] = -0.7;
  v[static_cast<size_t>(m.slot_time)] = 0.25;
  std::vector<double> a(static_cast<size_t>(m.n_eq())), b(a.size());
  ASSERT_EQ(m.residual(v.data(), a.data()), 0);
  ASSERT_EQ(loaded.residual(v.data(), b.data()), 0);
  EXPECT_EQ(a, b);
  std::vector<double> oa(m.output_names.size()), ob(oa.size());
  ASSERT_EQ(m.outputs(v.data(), oa.data()), 0);
  ASSERT_EQ(loaded.outputs(v.data(), ob.data()), 0);
  EXPECT_EQ(oa, ob);
  // the residual is the oscillator's: qdd + k x + d v - sin(t) with qdd = 0 here
  const double x = 0.3, xd = -0.7, t = 0.25;
  EXPECT_NEAR(std::fabs(a[0]), std::fabs(4 * x + 0.1 * xd - std::sin(t)), 1e-14);
  dlclose(lib);
  fs::remove(so);
}

TEST(FmuExport, ArchiveRoundTripsAndIsWrittenAtomically) {
  const std::string path = testutil::temp_path("archive.fmu");
  std::string binary(100000, '\0');
  for (size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>((i * 7919) % 251);
  std::vector<ArchiveEntry> in = {{"modelDescription.xml", "<?xml version=\"1.0\"?>\n<a/>\n"},
                                  {"binaries/linux64/M.so", binary},
                                  {"documentation/m.mbs", "model M end M;\n"}};
  ASSERT_EQ(write_archive(path, in), "");
  std::vector<ArchiveEntry> out;
  ASSERT_EQ(read_archive(path, out), "");
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].name, in[i].name);
    EXPECT_EQ(out[i].bytes, in[i].bytes);
  }
  // a write that fails (the target is a directory) leaves no temporary file and no archive
  const std::string dir = testutil::temp_path("archive_dir.fmu");
  fs::create_directories(dir);
  EXPECT_NE(write_archive(dir, in), "");
  EXPECT_TRUE(fs::is_directory(dir));
  for (const auto& e : fs::directory_iterator(fs::path(dir).parent_path()))
    EXPECT_EQ(e.path().filename().string().find("archive_dir.fmu.tmp"), std::string::npos);
  // not a zip file
  std::ofstream(testutil::temp_path("not.fmu")) << "plain text";
  EXPECT_NE(read_archive(testutil::temp_path("not.fmu"), out), "");
  fs::remove(path);
  fs::remove_all(dir);
}

TEST(FmuExport, KernelsForANamedCpuAndAnUnknownOne) {
  CompileResult host = compile_for_export("cpu_host", kOscillator, "");
  CompileResult v3 = compile_for_export("cpu_v3", kOscillator, "x86-64-v3");
  ASSERT_TRUE(host.model && v3.model);
  CompileOptions o;
  o.file = testutil::temp_path("cpu_bad.mbs");
  std::ofstream(o.file) << kOscillator;
  o.cache_dir = "off";
  o.cpu = "no-such-cpu";
  std::ostringstream emit, diag;
  CompileResult bad = compile(o, emit, diag);
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(diag.str().find("no-such-cpu"), std::string::npos) << diag.str();
}

TEST(FmuExport, RefusesModelExchangeOfAConstrainedModelAndUnknownOutputs) {
  CompileResult r = compile_for_export("me_refused", kCartesianPendulum);
  ASSERT_TRUE(r.model);
  ExportOptions o;
  o.path = testutil::temp_path("me_refused.fmu");
  fs::remove(o.path);
  o.model_exchange = true;
  std::string e = export_fmu(*r.model, r.object_files, o);
  EXPECT_NE(e.find("no model exchange"), std::string::npos) << e;
  EXPECT_NE(e.find("x^2 + y^2 = L^2"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(o.path));
  o.model_exchange = false;
  o.outputs = {"nosuch"};
  o.outputs_given = true;
  e = export_fmu(*r.model, r.object_files, o);
  EXPECT_NE(e.find("nosuch"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(o.path));
}

TEST(FmuExport, ModelIdentifierIsACIdentifier) {
  EXPECT_EQ(model_identifier("Pendulum"), "Pendulum");
  EXPECT_EQ(model_identifier("pkg.Model-2"), "pkg_Model_2");
  EXPECT_EQ(model_identifier("2D"), "m_2D");
}

}  // namespace
}  // namespace mbs::fmu
