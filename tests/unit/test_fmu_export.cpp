// Tests of the pieces of FMU export (tools/fmu/Export.h): the embedding object carries the model
// image, the configuration and a kernel table whose code gives the JIT's results bit for bit in a
// linked library; the .fmu archive round-trips and is written atomically; kernels compiled for a
// named CPU; clear refusals (model exchange of a constrained model, an unknown CPU, an unknown
// output).
#include <gtest/gtest.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
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

// A temporary directory of the test, removed at its end.
struct TempDirForTest {
  std::string path;
  TempDirForTest() {
    std::string pattern = testutil::temp_path("fmu-export-XXXXXX");
    if (mkdtemp(pattern.data())) path = pattern;
  }
  ~TempDirForTest() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return path + "/" + name; }
};

// The embedding object (read back with LLVM's object reader): it defines the model image, its
// size, the configuration and the kernel table with its count, with those contents, and refers to
// exactly the kernels' symbols (the table's entries), so a library without one of them does not
// link. (That the linked library's FMI functions read them is test_fmu_end_to_end's part.)
TEST(FmuExport, EmbeddingObjectCarriesModelConfigAndKernels) {
  CompileResult r = compile_for_export("embed_osc", kOscillator);
  ASSERT_TRUE(r.model);
  ASSERT_FALSE(r.object_files.empty());
  const rt::CompiledModel& m = *r.model;
  const std::string image = rt::write_model_image(m);
  const std::string config = "mbs-fmu-config 1\nmodel_identifier Oscillator\n";
  const std::set<std::string> symbols = kernel_symbols(m);
  std::string error;
  const std::string embed =
      embedding_object(image, config, std::vector<std::string>(symbols.begin(), symbols.end()),
                       kDefaultFmuCpu, &error);
  ASSERT_FALSE(embed.empty()) << error;

  auto object = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(embed.data(), embed.size()), "embedding.o"));
  ASSERT_TRUE(static_cast<bool>(object)) << llvm::toString(object.takeError());
  std::map<std::string, std::string> data;  // defined symbol -> its bytes
  std::set<std::string> undefined;
  for (const llvm::object::SymbolRef& sym : (*object)->symbols()) {
    auto name = sym.getName();
    auto flags = sym.getFlags();
    ASSERT_TRUE(name && flags);
    if (*flags & llvm::object::SymbolRef::SF_Undefined) {
      if (!name->empty()) undefined.insert(name->str());
      continue;
    }
    auto section = sym.getSection();
    auto address = sym.getAddress();
    ASSERT_TRUE(section && address);
    if (*section == (*object)->section_end()) continue;
    auto contents = (*section)->getContents();
    ASSERT_TRUE(static_cast<bool>(contents));
    const uint64_t size = llvm::object::ELFSymbolRef(sym).getSize();
    const uint64_t offset = *address - (*section)->getAddress();
    if ((*section)->isBSS()) continue;
    data[name->str()] = contents->substr(offset, size).str();
  }
  ASSERT_TRUE(data.count("mbs_fmu_model_image"));
  EXPECT_EQ(data["mbs_fmu_model_image"], image);
  auto u64 = [](const std::string& bytes) {
    uint64_t x = 0;
    for (size_t i = 0; i < 8 && i < bytes.size(); ++i)
      x |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
    return x;
  };
  EXPECT_EQ(u64(data["mbs_fmu_model_image_size"]), image.size());
  EXPECT_EQ(data["mbs_fmu_config"], config + std::string(1, '\0'));
  EXPECT_EQ(u64(data["mbs_fmu_kernel_count"]), symbols.size());
  EXPECT_EQ(data["mbs_fmu_kernels"].size(), 16 * symbols.size());  // {name, code} per kernel
  EXPECT_EQ(undefined, symbols);
  // a library of the kernels and the embedding links; without one kernel's object it does not
  TempDirForTest dir;
  std::vector<std::string> objects = r.object_files;
  objects.push_back(embed);
  EXPECT_EQ(link_shared_library(objects, {"mbs_fmu_selftest_klu"}, dir.file("ok.so")), "");
  std::vector<std::string> missing = {embed};
  EXPECT_NE(link_shared_library(missing, {"mbs_fmu_selftest_klu"}, dir.file("bad.so")), "");
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
  // the embedding object goes through the same target (codegen::emit_object)
  std::string error;
  EXPECT_EQ(embedding_object("image", "config", {}, "no-such-cpu", &error), "");
  EXPECT_NE(error.find("no-such-cpu"), std::string::npos) << error;
  EXPECT_NE(embedding_object("image", "config", {}, "x86-64-v3", &error), "") << error;
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
