// Tests of the FMU library linker (tools/fmu/Link.h): kernels compiled by the JIT pipeline and
// the FMU runtime blob linked into a shared library that a plain C program loads from a fresh
// directory in an empty environment, with the same results as the JIT; its dependencies (libc,
// libm, the dynamic loader only) and exports (exactly the requested symbols); two links in one
// process; clear errors for a bad object, an unresolved symbol and an export that does not exist;
// the time of a link.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <llvm/AsmParser/Parser.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/codegen/Jit.h"
#include "tests/unit/fmu_test_util.h"
#include "tools/fmu/Link.h"

namespace mbs::fmu {
namespace {

using testutil::command_output;
using testutil::lines;
using testutil::ProgramRun;
using testutil::run_without_environment;
using testutil::TempDir;

namespace fs = std::filesystem;
using codegen::JitModule;
using codegen::KernelSpec;
using sym::Context;
using sym::Expr;
using sym::Op;

// An object file compiled from LLVM IR text for the host (position-independent).
std::string object_from_ir(const std::string& ir) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::LLVMContext context;
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> module = llvm::parseAssemblyString(ir, diagnostic, context);
  if (!module) return "";
  const std::string triple = llvm::sys::getDefaultTargetTriple();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) return "";
  std::unique_ptr<llvm::TargetMachine> machine(
      target->createTargetMachine(triple, "generic", "", llvm::TargetOptions(), llvm::Reloc::PIC_));
  module->setDataLayout(machine->createDataLayout());
  module->setTargetTriple(triple);
  llvm::SmallVector<char, 0> bytes;
  llvm::raw_svector_ostream os(bytes);
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, os, nullptr, llvm::CGFT_ObjectFile)) return "";
  passes.run(*module);
  return std::string(bytes.begin(), bytes.end());
}

// Kernels over v = [x, y, z] that call libm (sin, cos, atan2, exp, pow, log) and one whose
// output is not finite for x < 0.
class FmuLink : public ::testing::Test {
 protected:
  Context cx;
  std::unique_ptr<JitModule> jit;
  std::vector<KernelSpec> kernels;

  void SetUp() override {
    std::vector<Expr> v;
    for (const char* name : {"x", "y", "z"}) v.push_back(cx.symbol(cx.new_symbol(name)));
    const Expr x = v[0], y = v[1], z = v[2];
    kernels.push_back({"pendulum_rates",
                       {cx.mul(cx.num(-9.81), cx.unary(Op::Sin, x)),
                        cx.add(cx.unary(Op::Cos, y), cx.pow(z, cx.num(3.0))),
                        cx.binary(Op::Atan2, x, y), cx.mul(cx.unary(Op::Exp, z), cx.pow(y, x))}});
    kernels.push_back({"log_of_x", {cx.unary(Op::Log, x), cx.unary(Op::Tanh, z)}});
    std::string error;
    codegen::JitOptions options;
    options.keep_object_files = true;
    jit = JitModule::compile(cx, kernels, options, &error);
    ASSERT_NE(jit, nullptr) << error;
  }

  std::vector<std::string> kernel_names() const {
    std::vector<std::string> names;
    for (const KernelSpec& k : kernels) names.push_back(k.name);
    return names;
  }

  std::vector<std::string> all_exports() const {
    std::vector<std::string> names = kernel_names();
    names.push_back("mbs_fmu_selftest_klu");
    names.push_back("mbs_fmu_selftest_exception");
    names.push_back("mbs_fmu_selftest_option");
    return names;
  }

  // Runs the kernel through the JIT: status, then the outputs.
  std::vector<double> jit_call(const std::string& name, const std::vector<double>& v,
                               size_t outputs) const {
    std::vector<double> out(outputs + 1, 0.0);
    const int32_t status = jit->lookup(name)(v.data(), out.data() + 1);
    out[0] = status;
    return out;
  }
};

// The library linked, then copied alone into a fresh directory (the link directory removed).
fs::path link_and_move(const std::vector<std::string>& objects,
                       const std::vector<std::string>& exports, const TempDir& final_dir) {
  TempDir link_dir;
  const fs::path linked = link_dir.path / "libmodel.so";
  const std::string error = link_shared_library(objects, exports, linked.string());
  EXPECT_EQ(error, "");
  const fs::path moved = final_dir.path / "libmodel.so";
  std::error_code ec;
  fs::copy_file(linked, moved, ec);
  EXPECT_FALSE(ec) << ec.message();
  return moved;
}

TEST_F(FmuLink, KernelsRunInALoadedLibraryAsInTheJit) {
  TempDir dir;
  const fs::path lib = link_and_move(jit->object_files(), all_exports(), dir);
  const std::vector<std::vector<double>> inputs = {{0.3, 1.7, -0.4}, {-1.25, 0.5, 2.0}};
  for (const KernelSpec& k : kernels) {
    for (const std::vector<double>& v : inputs) {
      std::vector<std::string> args = {MBS_FMU_LOAD_DEMO_PATH, lib.string(), "kernel", k.name,
                                       std::to_string(k.outputs.size())};
      char text[64];
      for (double value : v) {
        std::snprintf(text, sizeof text, "%.17g", value);
        args.push_back(text);
      }
      const ProgramRun r = run_without_environment(args);
      ASSERT_EQ(r.exit_code, 0) << r.out;
      const std::vector<std::string> got = lines(r.out);
      const std::vector<double> want = jit_call(k.name, v, k.outputs.size());
      ASSERT_EQ(got.size(), 2 + k.outputs.size()) << r.out;
      EXPECT_EQ(got[0], "environ 0");
      EXPECT_EQ(got[1], "status " + std::to_string(static_cast<int>(want[0]))) << k.name;
      for (size_t i = 0; i < k.outputs.size(); ++i) {
        const double value = std::strtod(got[2 + i].c_str(), nullptr);
        // the same machine code and the same libm: bit for bit (NaN for log of x < 0)
        if (std::isnan(want[1 + i])) {
          EXPECT_TRUE(std::isnan(value)) << k.name << " output " << i;
        } else {
          EXPECT_EQ(value, want[1 + i]) << k.name << " output " << i;
        }
      }
    }
  }
}

TEST_F(FmuLink, RuntimeSolvesWithKluInsideTheLibrary) {
  TempDir dir;
  const fs::path lib = link_and_move(jit->object_files(), all_exports(), dir);
  const int n = 30;
  const ProgramRun r =
      run_without_environment({MBS_FMU_LOAD_DEMO_PATH, lib.string(), "klu", std::to_string(n)});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::vector<std::string> got = lines(r.out);
  ASSERT_EQ(got.size(), static_cast<size_t>(2 + n)) << r.out;
  EXPECT_EQ(got[1], "status 0");
  // tridiag(-1, 4, -1) x = b, b_k = k + 1, by the Thomas algorithm
  std::vector<double> c(n), d(n);
  for (int k = 0; k < n; ++k) {
    const double denominator = 4.0 - (k > 0 ? -1.0 * c[k - 1] : 0.0);
    c[k] = -1.0 / denominator;
    d[k] = (k + 1.0 - (k > 0 ? -1.0 * d[k - 1] : 0.0)) / denominator;
  }
  std::vector<double> x(n);
  for (int k = n - 1; k >= 0; --k) x[k] = d[k] - (k + 1 < n ? c[k] * x[k + 1] : 0.0);
  for (int k = 0; k < n; ++k) {
    EXPECT_NEAR(std::strtod(got[2 + k].c_str(), nullptr), x[k], 1e-14 * (1 + std::abs(x[k])))
        << "x[" << k << "]";
  }
}

TEST_F(FmuLink, RuntimeExceptionsAreCaughtInsideTheLibrary) {
  TempDir dir;
  const fs::path lib = link_and_move(jit->object_files(), all_exports(), dir);
  const ProgramRun r = run_without_environment({MBS_FMU_LOAD_DEMO_PATH, lib.string(), "exception"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::vector<std::string> got = lines(r.out);
  ASSERT_EQ(got.size(), 3u) << r.out;
  EXPECT_NE(got[1], "status -1");
  EXPECT_NE(got[2].find("KluSolver::setup: entry 0"), std::string::npos) << got[2];
}

TEST_F(FmuLink, SolverOptionsWorkInsideTheLibrary) {
  TempDir dir;
  const fs::path lib = link_and_move(jit->object_files(), all_exports(), dir);
  ProgramRun r =
      run_without_environment({MBS_FMU_LOAD_DEMO_PATH, lib.string(), "option", "t_end", "2.5"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(lines(r.out), (std::vector<std::string>{"environ 0", "status 0", "2.5"}));
  r = run_without_environment({MBS_FMU_LOAD_DEMO_PATH, lib.string(), "option", "t_ned", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::vector<std::string> got = lines(r.out);
  ASSERT_EQ(got.size(), 3u) << r.out;
  EXPECT_EQ(got[1], "status 1");
  EXPECT_NE(got[2].find("unknown solver option 't_ned'"), std::string::npos) << got[2];
  EXPECT_NE(got[2].find("t_end"), std::string::npos) << "did you mean: " << got[2];
}

// Every undefined symbol of the runtime blob is defined by libc, libm or the dynamic loader: the
// blob brings all of its own dependencies.
TEST(FmuBlob, NeedsOnlyWhatGlibcDefines) {
  std::set<std::string> glibc;
  for (const char* lib : {"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libm.so.6",
                          "/lib64/ld-linux-x86-64.so.2"}) {
    for (const std::string& line :
         lines(command_output(std::string("nm -D --defined-only --format=posix ") + lib))) {
      const std::string name = line.substr(0, line.find(' '));
      glibc.insert(name.substr(0, name.find('@')));
    }
  }
  ASSERT_GT(glibc.size(), 1000u);
  const std::vector<std::string> undefined = lines(command_output(
      std::string("nm --undefined-only --format=posix ") + runtime_blob_path() + " | grep ' U '"));
  EXPECT_FALSE(undefined.empty());
  for (const std::string& line : undefined) {
    const std::string name = line.substr(0, line.find(' '));
    if (name == "_GLOBAL_OFFSET_TABLE_") continue;  // made by the linker
    EXPECT_TRUE(glibc.count(name)) << name << " is not defined by glibc";
  }
}

// Most importers are C++ programs with their own libstdc++: the library's copy (static, local)
// and the host's live side by side; the library's exceptions stay inside it. Loaded twice (two
// FMUs of the same export, as an importer with two models has them) each copy runs on its own.
TEST_F(FmuLink, LoadsIntoACppProcessTwice) {
  TempDir a, b;
  const fs::path first = link_and_move(jit->object_files(), all_exports(), a);
  const fs::path second = link_and_move(jit->object_files(), all_exports(), b);
  void* lib1 = dlopen(first.c_str(), RTLD_NOW | RTLD_LOCAL);
  void* lib2 = dlopen(second.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib1, nullptr) << dlerror();
  ASSERT_NE(lib2, nullptr) << dlerror();
  using Exception = int32_t (*)(char*, int32_t);
  using Klu = int32_t (*)(int32_t, double*);
  for (void* lib : {lib1, lib2}) {
    auto exception = reinterpret_cast<Exception>(dlsym(lib, "mbs_fmu_selftest_exception"));
    auto klu = reinterpret_cast<Klu>(dlsym(lib, "mbs_fmu_selftest_klu"));
    ASSERT_TRUE(exception && klu);
    char message[256];
    EXPECT_GT(exception(message, sizeof message), 0);
    EXPECT_NE(std::string(message).find("KluSolver::setup"), std::string::npos) << message;
    std::vector<double> x(25);
    EXPECT_EQ(klu(25, x.data()), 0);
    EXPECT_GT(x[0], 0.0);
  }
  EXPECT_NE(dlsym(lib1, "pendulum_rates"), dlsym(lib2, "pendulum_rates"));
  EXPECT_EQ(dlclose(lib1), 0);
  EXPECT_EQ(dlclose(lib2), 0);
}

// The FMI functions of the blob link and run in a library without the exporter's embedding
// object: their weak references to the embedded model stay null, and instantiation reports it
// through the importer's logger (tests/unit/test_fmu_capi.cpp runs them with a model).
TEST_F(FmuLink, FmiFunctionsWithoutAnEmbeddedModel) {
  TempDir dir;
  std::vector<std::string> exports = all_exports();
  for (const char* f : {"fmi2GetVersion", "fmi2Instantiate", "fmi2DoStep", "fmi3GetVersion",
                        "fmi3InstantiateCoSimulation"})
    exports.push_back(f);
  const fs::path lib = link_and_move(jit->object_files(), exports, dir);
  void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  using Version = const char* (*)();
  auto v2 = reinterpret_cast<Version>(dlsym(handle, "fmi2GetVersion"));
  auto v3 = reinterpret_cast<Version>(dlsym(handle, "fmi3GetVersion"));
  ASSERT_TRUE(v2 && v3);
  EXPECT_STREQ(v2(), "2.0");
  EXPECT_STREQ(v3(), "3.0");
  static std::string logged;
  using Log3 = void (*)(void*, int, const char*, const char*);
  using Instantiate3 = void* (*)(const char*, const char*, const char*, bool, bool, bool, bool,
                                 const uint32_t*, size_t, void*, Log3, void*);
  auto instantiate = reinterpret_cast<Instantiate3>(dlsym(handle, "fmi3InstantiateCoSimulation"));
  ASSERT_TRUE(instantiate);
  const Log3 log = [](void*, int, const char*, const char* message) { logged = message; };
  EXPECT_EQ(
      instantiate("i", "token", "", false, false, false, false, nullptr, 0, nullptr, log, nullptr),
      nullptr);
  EXPECT_NE(logged.find("no model embedded"), std::string::npos) << logged;
  using DoStep2 = int (*)(void*, double, double, int);
  auto do_step = reinterpret_cast<DoStep2>(dlsym(handle, "fmi2DoStep"));
  ASSERT_TRUE(do_step);
  EXPECT_EQ(do_step(nullptr, 0.0, 0.1, 0), 3);  // fmi2Error for a null instance
  EXPECT_EQ(dlclose(handle), 0);
}

// Loading and unloading the library returns what it allocated, libstdc++'s emergency exception
// pool included (blob/Crt.cpp); with a leak of that pool, 40 cycles would keep 2.8 MB.
TEST_F(FmuLink, UnloadsWithoutLeaking) {
  TempDir dir;
  const fs::path lib = link_and_move(jit->object_files(), all_exports(), dir);
  const auto cycle = [&] {
    void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << dlerror();
    using Exception = int32_t (*)(char*, int32_t);
    auto exception = reinterpret_cast<Exception>(dlsym(handle, "mbs_fmu_selftest_exception"));
    ASSERT_NE(exception, nullptr);
    char message[64];
    EXPECT_GT(exception(message, sizeof message), 0);
    EXPECT_EQ(dlclose(handle), 0);
  };
  cycle();  // the loader's own first-use allocations
  const size_t before = mallinfo2().uordblks;
  for (int i = 0; i < 40; ++i) cycle();
  const size_t after = mallinfo2().uordblks;
  if (before == 0 && after == 0) GTEST_SKIP() << "mallinfo2 not available (sanitizer allocator)";
  EXPECT_LT(after, before + 200'000) << "bytes in use grew from " << before << " to " << after;
}

// Kernels spread over several objects (an optimised module and an O0 one, as large models are
// compiled) link into one library; each kernel gives the JIT's result.
TEST_F(FmuLink, LinksSeveralObjects) {
  codegen::JitOptions options;
  options.keep_object_files = true;
  options.max_optimised_total_nodes = 6;  // log_of_x (6 nodes) at O2, pendulum_rates at O0
  std::vector<KernelSpec> reordered = {kernels[1], kernels[0]};
  std::string error;
  std::unique_ptr<JitModule> split = JitModule::compile(cx, reordered, options, &error);
  ASSERT_NE(split, nullptr) << error;
  ASSERT_GE(split->object_files().size(), 2u);
  TempDir dir;
  const fs::path lib = link_and_move(split->object_files(), kernel_names(), dir);
  void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  const std::vector<double> v = {0.75, 1.5, -0.25};
  for (const KernelSpec& k : kernels) {
    auto fn = reinterpret_cast<codegen::KernelFn>(dlsym(handle, k.name.c_str()));
    ASSERT_NE(fn, nullptr) << k.name;
    std::vector<double> out(k.outputs.size());
    const std::vector<double> want = jit_call(k.name, v, k.outputs.size());
    EXPECT_EQ(fn(v.data(), out.data()), static_cast<int32_t>(want[0]));
    for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], want[1 + i]) << k.name << " " << i;
  }
  EXPECT_EQ(dlclose(handle), 0);
}

TEST_F(FmuLink, NeedsOnlyLibcLibmAndTheLoader) {
  TempDir dir;
  const fs::path lib = link_and_move(jit->object_files(), all_exports(), dir);
  const std::string dynamic = command_output("readelf -d " + lib.string());
  std::set<std::string> needed;
  for (const std::string& line : lines(dynamic)) {
    const size_t open = line.find("(NEEDED)");
    if (open == std::string::npos) continue;
    const size_t a = line.find('['), b = line.find(']');
    ASSERT_TRUE(a != std::string::npos && b > a) << line;
    needed.insert(line.substr(a + 1, b - a - 1));
  }
  EXPECT_FALSE(needed.empty()) << dynamic;
  const std::set<std::string> allowed = {"libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2"};
  for (const std::string& n : needed) EXPECT_TRUE(allowed.count(n)) << "needs " << n;
  EXPECT_EQ(dynamic.find("(RPATH)"), std::string::npos);
  EXPECT_EQ(dynamic.find("(RUNPATH)"), std::string::npos);
  EXPECT_NE(dynamic.find("Library soname: [libmodel.so]"), std::string::npos) << dynamic;
  // references inside the library bound to it; no text relocations, no executable stack
  EXPECT_NE(dynamic.find("SYMBOLIC"), std::string::npos) << dynamic;
  EXPECT_EQ(dynamic.find("TEXTREL"), std::string::npos);
  EXPECT_EQ(command_output("readelf -lW " + lib.string() + " | grep GNU_STACK | grep RWE"), "");
}

TEST_F(FmuLink, ExportsExactlyTheRequestedSymbols) {
  TempDir dir;
  const std::vector<std::string> exports = {"pendulum_rates", "mbs_fmu_selftest_klu"};
  const fs::path lib = link_and_move(jit->object_files(), exports, dir);
  std::set<std::string> defined;
  for (const std::string& line :
       lines(command_output("nm -D --defined-only --format=posix " + lib.string()))) {
    defined.insert(line.substr(0, line.find(' ')));
  }
  EXPECT_EQ(defined, std::set<std::string>(exports.begin(), exports.end()));
}

TEST_F(FmuLink, LinksTwiceInOneProcess) {
  TempDir a, b;
  const fs::path first = link_and_move(jit->object_files(), {"pendulum_rates"}, a);
  const fs::path second = link_and_move(jit->object_files(), {"log_of_x"}, b);
  for (const auto& [lib, kernel] : {std::pair{first, "pendulum_rates"}, {second, "log_of_x"}}) {
    const ProgramRun r =
        run_without_environment({MBS_FMU_LOAD_DEMO_PATH, lib.string(), "kernel", kernel, "1", "1"});
    EXPECT_EQ(r.exit_code, 0) << lib << ": " << r.out;
  }
}

TEST(FmuLinkErrors, GarbageObjectIsAClearError) {
  TempDir dir;
  const std::string out = (dir.path / "libbad.so").string();
  const std::string error = link_shared_library({"this is not an object file"}, {}, out);
  EXPECT_NE(error.find("cannot link the FMU library " + out), std::string::npos) << error;
  EXPECT_NE(error.find("object 0 is not a relocatable x86-64 ELF object"), std::string::npos)
      << error;
  EXPECT_FALSE(fs::exists(out));
}

// An ELF header followed by garbage gets past the header check to the linker, which must report
// it (LLD ends the process on such input: the link runs in a child process).
TEST_F(FmuLink, CorruptObjectIsAClearError) {
  std::string object = jit->object_files().at(0).substr(0, 64);
  object += std::string(200, '\xff');
  TempDir dir;
  const std::string out = (dir.path / "libbad.so").string();
  const std::string error = link_shared_library({object}, kernel_names(), out);
  EXPECT_NE(error.find("cannot link the FMU library " + out), std::string::npos) << error;
  EXPECT_NE(error.find("object0.o"), std::string::npos) << error;
  EXPECT_EQ(error.find("mbs-fmu-link-"), std::string::npos) << "names its temporary directory";
  EXPECT_FALSE(fs::exists(out));
  // and the process can link again; a failed link leaves that library as it was
  EXPECT_EQ(link_shared_library(jit->object_files(), kernel_names(), out), "");
  const auto size = fs::file_size(out);
  EXPECT_NE(link_shared_library({object}, kernel_names(), out), "");
  EXPECT_EQ(fs::file_size(out), size);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()), 1)
      << "temporary files left next to the library";
}

TEST(FmuLinkErrors, UnresolvedSymbolIsAClearError) {
  const std::string object = object_from_ir(R"(
declare double @mbs_no_such_function(double)
define i32 @calls_missing(ptr %v, ptr %out) {
  %x = load double, ptr %v
  %y = call double @mbs_no_such_function(double %x)
  store double %y, ptr %out
  ret i32 0
}
)");
  ASSERT_FALSE(object.empty());
  TempDir dir;
  const std::string out = (dir.path / "libbad.so").string();
  const std::string error = link_shared_library({object}, {"calls_missing"}, out);
  EXPECT_NE(error.find("undefined symbol: mbs_no_such_function"), std::string::npos) << error;
  EXPECT_NE(error.find("object0.o"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(FmuLink, ExportOfAMissingSymbolIsAClearError) {
  TempDir dir;
  const std::string out = (dir.path / "libbad.so").string();
  std::string error = link_shared_library(jit->object_files(), {"no_such_kernel"}, out);
  EXPECT_NE(error.find("no_such_kernel"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(out));
  error = link_shared_library(jit->object_files(), {"a; local: *"}, out);
  EXPECT_NE(error.find("not a C identifier"), std::string::npos) << error;
}

// The time of one link of a small kernel set with the runtime blob (printed; docs/performance.md,
// "FMU linking"): wall clock in this process, and the CPU time of the linker's child process,
// which a loaded machine distorts less.
TEST_F(FmuLink, LinkTime) {
  TempDir dir;
  const std::vector<std::string> objects = jit->object_files();
  const auto child_cpu_ms = [] {
    rusage u{};
    getrusage(RUSAGE_CHILDREN, &u);
    return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
           (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-3;
  };
  std::vector<double> wall, cpu;
  for (int i = 0; i < 5; ++i) {
    const double c0 = child_cpu_ms();
    const auto t0 = std::chrono::steady_clock::now();
    const std::string error =
        link_shared_library(objects, all_exports(), (dir.path / "libmodel.so").string());
    wall.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    cpu.push_back(child_cpu_ms() - c0);
    ASSERT_EQ(error, "");
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  std::printf(
      "FMU link of %zu kernel object(s) + runtime blob (%ju bytes) into a %ju-byte library: "
      "wall median %.1f ms (min %.1f), linker CPU median %.1f ms (min %.1f)\n",
      objects.size(), static_cast<uintmax_t>(fs::file_size(runtime_blob_path())),
      static_cast<uintmax_t>(fs::file_size(dir.path / "libmodel.so")), wall[2], wall[0], cpu[2],
      cpu[0]);
}

}  // namespace
}  // namespace mbs::fmu
