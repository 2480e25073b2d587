// JIT compilation of kernels with ORC LLJIT: lower -> verify -> optimise -> compile -> look up.
//
// Set MBS_JIT_DEBUG=1 in the environment to have each step report its time on stderr.
#include "compiler/codegen/Jit.h"

#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/BLAKE3.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "compiler/codegen/LowerToLlvm.h"
#include "compiler/codegen/ObjectCache.h"

namespace mbs::codegen {

namespace {

// Huge kernels (JitOptions::max_optimised_kernel_nodes) are compiled in a module of their own at
// O0: no IR passes, fast instruction selection and register allocation. Code generation of one
// huge straight-line function grows about quadratically with its size at the default codegen
// level (greedy register allocation and the two-address pass over one basic block; the SLP
// vectoriser in the IR pipeline), while O0 grows linearly. Measured with
//   MBS_BIG_KERNEL_STAGES=650|1300|2600 build/release/tests/test_codegen --gtest_filter=*BigKernel*
// on the 2-core build VM shared with other jobs (so +-50%):
//   kernel   nodes   O2 compile   O2 run     O0 compile   O0 run
//   libm     4.7k    0.40 s       15 us      0.09 s       17 us
//   libm     9.4k    1.2-1.5 s    31 us      0.29-0.36 s  37-66 us
//   libm     19k     4.1 s        68 us      0.71 s       88 us
//   arith    6.4k    0.85 s       2.2 us     0.19 s       9.6 us
// Arithmetic kernels run 4x slower at O0 (calls to libm hide the difference in the others), so
// the default limit is where O2 takes a few seconds, not lower. Tried and rejected: the O1 IR
// pipeline in front of the fast code generator (0.3 s more at 15k nodes, no measurable gain),
// and splitting a huge kernel into several functions that pass values through a stack array
// (slower still: the machine scheduler is quadratic in the resulting loads and stores).

bool debug_enabled() {
  static const bool on = [] {
    const char* s = std::getenv("MBS_JIT_DEBUG");
    return s != nullptr && *s != '\0' && *s != '0';
  }();
  return on;
}

// Times the steps of one compile() call and reports them when MBS_JIT_DEBUG is set.
class StepTimer {
 public:
  void step(const char* name) {
    auto now = std::chrono::steady_clock::now();
    if (debug_enabled() && name_ != nullptr) {
      std::fprintf(stderr, "[mbs jit] %-12s %8.3f ms\n", name_,
                   std::chrono::duration<double, std::milli>(now - start_).count());
    }
    name_ = name;
    start_ = now;
  }
  ~StepTimer() { step(nullptr); }

 private:
  const char* name_ = nullptr;
  std::chrono::steady_clock::time_point start_;
};

// The host target, detected once. A TargetMachine costs about half a millisecond to set up (its
// subtarget tables), a noticeable part of compiling a small model, so one per codegen level is
// kept for the life of the process. TargetMachines are not thread-safe: `mutex` is held while
// one is used. Never destroyed (it must outlive every JitModule, including static ones).
struct HostTarget {
  std::mutex mutex;
  std::string error;  // why the host target is unusable, if it is
  std::unique_ptr<llvm::orc::JITTargetMachineBuilder> builder;
  std::unique_ptr<llvm::TargetMachine> machine[4];  // by codegen level
  std::string machine_layout;                       // their data layout (all the same)
};

HostTarget& host_target() {
  static HostTarget* host = [] {
    auto* h = new HostTarget;
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();  // host CPU name and features
    if (jtmb) {
      // position-independent code: the same object files link into the JIT and into a shared
      // library (an exported FMU); on x86-64 this costs nothing measurable in the kernels
      jtmb->setRelocationModel(llvm::Reloc::PIC_);
      h->builder = std::make_unique<llvm::orc::JITTargetMachineBuilder>(std::move(*jtmb));
    } else {
      h->error = llvm::toString(jtmb.takeError());
    }
    return h;
  }();
  return *host;
}

// The target of code for another CPU than the host's (JitOptions::cpu), made once per name and
// kept like the host's. Returns the host target for "".
HostTarget& target_for(const std::string& cpu) {
  if (cpu.empty()) return host_target();
  static std::mutex mutex;
  static auto* targets = new std::unordered_map<std::string, HostTarget*>;
  std::lock_guard<std::mutex> lock(mutex);
  HostTarget*& t = (*targets)[cpu];
  if (t != nullptr) return *t;
  t = new HostTarget;
  HostTarget& host = host_target();
  if (host.builder == nullptr) {
    t->error = host.error;
    return *t;
  }
  // an unknown CPU name would only be warned about by LLVM (on stderr): check it first
  const llvm::Triple& triple = host.builder->getTargetTriple();
  std::string lookup_error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple.str(), lookup_error);
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target != nullptr ? target->createMCSubtargetInfo(triple.str(), "", "") : nullptr);
  if (info == nullptr || !info->isCPUStringValid(cpu)) {
    t->error = "'" + cpu + "' is not a CPU LLVM " LLVM_VERSION_STRING " knows for " + triple.str();
    return *t;
  }
  llvm::orc::JITTargetMachineBuilder jtmb(triple);
  jtmb.setCPU(cpu);
  jtmb.setRelocationModel(llvm::Reloc::PIC_);
  t->builder = std::make_unique<llvm::orc::JITTargetMachineBuilder>(std::move(jtmb));
  return *t;
}

std::string message(llvm::Error e) {
  return llvm::toString(std::move(e));
}

llvm::CodeGenOpt::Level codegen_level(int opt_level) {
  switch (opt_level) {
    case 0:
      return llvm::CodeGenOpt::None;
    case 1:
      return llvm::CodeGenOpt::Less;
    case 3:
      return llvm::CodeGenOpt::Aggressive;
    default:
      return llvm::CodeGenOpt::Default;
  }
}

void optimise(llvm::Module& m, llvm::TargetMachine& tm, int opt_level) {
  if (opt_level <= 0) return;  // the O0 pipeline only handles always-inline and coroutines
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = opt_level == 1   ? llvm::OptimizationLevel::O1
                                  : opt_level == 2 ? llvm::OptimizationLevel::O2
                                                   : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(level);
  mpm.run(m, mam);
}

std::string print(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  os.flush();
  return s;
}

// The object cache (JitOptions::cache_dir, ObjectCache.h): an object file is stored under a key
// that hashes its unoptimised IR, the optimisation levels, the host CPU and features, the LLVM
// version and kCacheFormat (bump it when the optimisation pipeline changes without changing the
// IR).
// 4: the IR hashed as it is printed, after the key of the rest
// 5: the IR hashed as bitcode (printing it spent most of its time tracking text columns)
constexpr const char* kCacheFormat = "mbs-object-cache-5";

// A stream that hashes what is written to it: the text of a module of 10^5 equations is some
// 40 MB, which the key need not hold at once.
class HashingStream final : public llvm::raw_ostream {
 public:
  HashingStream() = default;
  ~HashingStream() override { flush(); }
  CacheKey key() {
    flush();
    return hash_.final();
  }

 private:
  void write_impl(const char* p, size_t n) override {
    hash_.update(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t*>(p), n));
    pos_ += n;
  }
  uint64_t current_pos() const override { return pos_; }
  llvm::BLAKE3 hash_;
  uint64_t pos_ = 0;
};

CacheKey object_key(const llvm::Module& m, int ir_level, int cg_level, const HostTarget& host) {
  std::string levels = std::to_string(ir_level) + "/" + std::to_string(cg_level);
  std::string features = host.builder->getFeatures().getString();
  const std::string_view material[] = {kCacheFormat, LLVM_VERSION_STRING, host.builder->getCPU(),
                                       features, levels};
  const CacheKey head = cache_key(material);
  HashingStream os;
  os.write(reinterpret_cast<const char*>(head.data()), head.size());
  llvm::WriteBitcodeToFile(m, os);
  return os.key();
}

// One job's use of the object cache.
struct CacheUse {
  std::string dir;   // "" = no cache
  bool read = true;  // false: compile afresh (the entry was damaged), then store the result
  std::string path;  // out: the entry of the job's kernels
  CacheKey key{};    // out
  bool hit = false;  // out: the object came from the cache
  std::vector<CacheDamage> damage;  // out: entries found unusable (deleted, if possible)
};

void discard(CacheUse& cache, std::string reason) {
  cache.damage.push_back({cache.path, std::move(reason), delete_cache_entry(cache.path)});
}

// Lowers, verifies, optimises (IR pipeline at ir_level) and compiles (code generator at
// cg_level) kernels into one object file, or takes it from the cache. Returns an error message,
// or "" on success. With own_machine, a TargetMachine of its own is made (for a job on another
// thread); otherwise the process's cached one is used under host.mutex.
std::string compile_to_object(const sym::Context& cx, KernelRefs kernels, int ir_level,
                              int cg_level, HostTarget& host, StepTimer& timer,
                              std::string* ir_text, std::unique_ptr<llvm::MemoryBuffer>& object,
                              bool own_machine, CacheUse& cache, size_t loop_min_outputs,
                              size_t loop_min_group) {
  timer.step("lower");
  llvm::LLVMContext ctx;
  ctx.setDiscardValueNames(ir_text == nullptr);  // names only cost time unless someone reads them
  llvm::Module module("mbs_kernels", ctx);
  if (std::string e = lower_kernels(cx, kernels, module, loop_min_outputs, loop_min_group);
      !e.empty())
    return e;

  timer.step("verify");
  {
    std::string problems;
    llvm::raw_string_ostream os(problems);
    if (llvm::verifyModule(module, &os)) {
      os.flush();
      return "internal error: generated IR does not verify:\n" + problems;
    }
  }

  bool cached = !cache.dir.empty() && ir_text == nullptr;
  if (cached) {
    timer.step("cache");
    cache.key = object_key(module, ir_level, cg_level, host);
    cache.path = cache_entry_path(cache.dir, cache.key);
    if (cache.read) {
      CacheRead entry = read_cache_entry(cache.path, cache.key);
      if (entry.object != nullptr) {
        object = std::move(entry.object);
        cache.hit = true;
        return {};
      }
      if (!entry.damage.empty()) discard(cache, std::move(entry.damage));
    }
  }

  std::unique_lock<std::mutex> lock(host.mutex, std::defer_lock);
  std::unique_ptr<llvm::TargetMachine> own;
  if (!own_machine) lock.lock();
  timer.step("target");
  std::unique_ptr<llvm::TargetMachine>& tm = own_machine ? own : host.machine[cg_level];
  if (own_machine) {
    llvm::orc::JITTargetMachineBuilder jtmb = *host.builder;
    jtmb.setCodeGenOptLevel(codegen_level(cg_level));
    auto made = jtmb.createTargetMachine();
    if (!made) return message(made.takeError());
    tm = std::move(*made);
  } else if (tm == nullptr) {
    llvm::orc::JITTargetMachineBuilder jtmb = *host.builder;
    jtmb.setCodeGenOptLevel(codegen_level(cg_level));
    auto made = jtmb.createTargetMachine();
    if (!made) return message(made.takeError());
    tm = std::move(*made);
    host.machine_layout = tm->createDataLayout().getStringRepresentation();
  }
  module.setDataLayout(tm->createDataLayout());
  module.setTargetTriple(tm->getTargetTriple().str());

  timer.step("optimise");
  optimise(module, *tm, ir_level);
  if (ir_text != nullptr) *ir_text += print(module);

  timer.step("codegen");
  auto compiled = llvm::orc::SimpleCompiler(*tm)(module);
  if (!compiled) return message(compiled.takeError());
  object = std::move(*compiled);
  if (cached) {  // best effort: a cache that cannot be written is no error
    (void)write_cache_entry(cache.path, cache.key,
                            std::string_view(object->getBufferStart(), object->getBufferSize()));
  }
  return {};
}

// A module of kernels compiled to one object file (on a thread of its own, or from the cache).
struct Job {
  std::vector<const KernelSpec*> kernels;  // the caller's
  int level = 0;
  std::string ir, error;
  std::unique_ptr<llvm::MemoryBuffer> object;
  CacheUse cache;
};

}  // namespace

struct JitModule::Impl {
  // The JIT owns the linked code. No LLVMContext is kept: kernels are compiled to an object file
  // before they reach the JIT, so the IR is freed at the end of compile().
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unordered_map<std::string, KernelFn> kernels;
  std::unordered_map<std::string, std::string> code_symbol;  // kernel name -> symbol of its code
  size_t cache_hits = 0, objects = 0;
  std::vector<CacheDamage> cache_damage;
  std::vector<std::string> object_bytes;  // the linked object files (JitModule::object_files)
  std::vector<std::string> optimised;     // JitModule::optimised_kernels

  // Links the jobs' objects (copies: the objects stay with the jobs, to be linked again if this
  // fails) into a new JIT and looks up every kernel. Returns "" or the error, and then sets
  // `culprit` to the job whose object failed, if one did.
  std::string link(HostTarget& host, const std::vector<Job>& jobs, size_t& culprit,
                   StepTimer& timer);
};

std::string JitModule::Impl::link(HostTarget& host, const std::vector<Job>& jobs, size_t& culprit,
                                  StepTimer& timer) {
  timer.step("jit setup");
  kernels.clear();
  jit.reset();
  auto made = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*host.builder).create();
  if (!made) return message(made.takeError());
  jit = std::move(*made);
  // ORC reports materialisation failures to stderr by default; the library prints nothing, the
  // failed lookup reports them instead
  auto session_errors = std::make_shared<std::string>();  // shared: the JIT outlives this call
  jit->getExecutionSession().setErrorReporter([session_errors](llvm::Error e) {
    *session_errors += (session_errors->empty() ? "" : "; ") + message(std::move(e));
  });
  std::string layout = jit->getDataLayout().getStringRepresentation();
  if (!jobs.empty() && !host.machine_layout.empty() && layout != host.machine_layout) {
    return "internal error: JIT data layout '" + layout + "' differs from the kernels' '" +
           host.machine_layout + "'";
  }
  // libm (and anything else the code generator's libcalls need) from the host process.
  auto generator = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      jit->getDataLayout().getGlobalPrefix());
  if (!generator) return message(generator.takeError());
  jit->getMainJITDylib().addGenerator(std::move(*generator));

  timer.step("link");
  for (size_t i = 0; i < jobs.size(); ++i) {
    const llvm::MemoryBuffer& object = *jobs[i].object;
    if (auto e = jit->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(
            object.getBuffer(), object.getBufferIdentifier()))) {
      culprit = i;
      return message(std::move(e));
    }
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    for (const KernelSpec* kp : jobs[i].kernels) {
      const KernelSpec& k = *kp;
      auto address = jit->lookup(k.name);
      if (!address) {
        culprit = i;
        std::string e = message(address.takeError());
        if (!session_errors->empty()) e += " (" + *session_errors + ")";
        return e;
      }
      kernels.emplace(k.name, address->toPtr<KernelFn>());
    }
  }
  return {};
}

std::vector<std::string> JitModule::optimised_kernels() const {
  return impl_->optimised;
}

std::vector<std::string> JitModule::object_files() const {
  return impl_->object_bytes;
}

std::vector<std::string> JitModule::take_object_files() {
  return std::move(impl_->object_bytes);
}

size_t JitModule::cache_hits() const {
  return impl_->cache_hits;
}
const std::vector<CacheDamage>& JitModule::cache_damage() const {
  return impl_->cache_damage;
}
size_t JitModule::objects() const {
  return impl_->objects;
}

JitModule::JitModule() : impl_(std::make_unique<Impl>()) {}
JitModule::~JitModule() = default;

std::vector<const KernelSpec*> kernel_refs(std::span<const KernelSpec> kernels) {
  std::vector<const KernelSpec*> refs;
  refs.reserve(kernels.size());
  for (const KernelSpec& k : kernels) refs.push_back(&k);
  return refs;
}

std::unique_ptr<JitModule> JitModule::compile(const sym::Context& cx,
                                              std::span<const KernelSpec> kernels,
                                              const JitOptions& options, std::string* error,
                                              std::string* ir_text) {
  return compile(cx, kernel_refs(kernels), options, error, ir_text);
}

std::unique_ptr<JitModule> JitModule::compile(const sym::Context& cx, KernelRefs kernels,
                                              const JitOptions& options, std::string* error,
                                              std::string* ir_text) {
  std::string ignored;
  std::string& err = error != nullptr ? *error : ignored;
  auto fail = [&](std::string what) -> std::unique_ptr<JitModule> {
    err = "JIT compilation failed: " + std::move(what);
    return nullptr;
  };
  if (options.opt_level < 0 || options.opt_level > 3) {
    return fail("opt_level " + std::to_string(options.opt_level) + " is not in 0..3");
  }
  StepTimer timer;
  timer.step("target");
  HostTarget& host = host_target();
  if (host.builder == nullptr) return fail("no native target: " + host.error);
  HostTarget& code = target_for(options.cpu);  // what the kernels are compiled for
  if (code.builder == nullptr) return fail(code.error);

  if (std::string e = check_kernel_names(kernels); !e.empty()) return fail(e);

  // Identical kernels (without constraints, the index-2 and initial systems are the residual
  // and its Newton matrix) are compiled once; the others' names are aliases.
  std::vector<const KernelSpec*> unique;
  std::vector<std::pair<std::string, std::string>> aliases;  // (name, the kernel it equals)
  for (const KernelSpec* k : kernels) {
    auto same = std::find_if(unique.begin(), unique.end(),
                             [&](const KernelSpec* u) { return u->outputs == k->outputs; });
    if (same != unique.end() && !k->outputs.empty()) {
      aliases.emplace_back(k->name, (*same)->name);
    } else {
      unique.push_back(k);
    }
  }

  // Huge kernels go into modules of their own, compiled at O0 (see the top of this file).
  timer.step("partition");
  std::vector<const KernelSpec*> normal;
  std::vector<const KernelSpec*> huge;
  std::vector<std::string> optimised_names;
  size_t optimised_nodes = 0, huge_nodes = 0;
  std::vector<size_t> huge_size;
  std::vector<std::string> unique_names;
  for (const KernelSpec* kp : unique) {
    const KernelSpec& k = *kp;
    unique_names.push_back(k.name);
    // size: computed nodes plus stores (a kernel of a few nodes can have thousands of outputs);
    // memory operations: the symbols loaded plus the stores
    const std::vector<sym::Expr> order = sym::topological_order(k.outputs);
    size_t nodes = order.size() + k.outputs.size();
    size_t memory = k.outputs.size();
    for (sym::Expr n : order) memory += n->is_symbol() ? 1 : 0;
    bool is_huge =
        options.opt_level > 0 && (nodes > options.max_optimised_kernel_nodes ||
                                  memory > options.max_optimised_kernel_memory ||
                                  optimised_nodes + nodes > options.max_optimised_total_nodes);
    if (options.opt_level == 0) is_huge = true;
    if (!is_huge) optimised_nodes += nodes;
    if (debug_enabled())
      std::fprintf(stderr, "[mbs jit] kernel %-18s %7zu nodes, %6zu outputs, %6zu memory, O%d\n",
                   k.name.c_str(), nodes, k.outputs.size(), memory,
                   is_huge ? 0 : options.opt_level);
    if (is_huge) {
      huge_size.push_back(nodes);
      huge_nodes += nodes;
      huge.push_back(kp);
    } else {
      optimised_names.push_back(k.name);
      normal.push_back(kp);
    }
  }
  // Jobs: the optimised module, and the O0 kernels in up to `threads` modules of similar size;
  // the first job runs on this thread, the others on threads of their own.
  std::vector<Job> jobs;
  auto new_job = [&](std::vector<const KernelSpec*> ks, int level) {
    Job& job = jobs.emplace_back();
    job.kernels = std::move(ks);
    job.level = level;
    job.cache.dir = options.cache_dir;
  };
  if (!normal.empty()) new_job(std::move(normal), options.opt_level);
  {
    unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    size_t parts = std::min<size_t>(
        {options.threads > 0 ? options.threads : hw, huge.size(), 1 + huge_nodes / 4000});
    parts = std::max<size_t>(parts, huge.empty() ? 0 : 1);
    size_t first = jobs.size();
    for (size_t p = 0; p < parts; ++p) new_job({}, 0);
    // largest first into the lightest part
    std::vector<size_t> order(huge.size()), load(parts, 0);
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return huge_size[a] > huge_size[b]; });
    for (size_t i : order) {
      size_t p = std::min_element(load.begin(), load.end()) - load.begin();
      load[p] += huge_size[i];
      jobs[first + p].kernels.push_back(huge[i]);
    }
  }
  if (ir_text != nullptr) ir_text->clear();
  auto run_job = [&](Job& job, bool own_machine, StepTimer& t) {
    try {
      job.error = compile_to_object(cx, job.kernels, job.level, job.level, code, t,
                                    ir_text != nullptr ? &job.ir : nullptr, job.object, own_machine,
                                    job.cache, options.loop_min_outputs, options.loop_min_group);
    } catch (const std::exception& ex) {  // an internal error of the lowering: report, don't die
      job.error = ex.what();
    }
  };
  {
    std::vector<std::thread> threads;
    std::vector<StepTimer> timers(jobs.size());
    for (size_t i = 1; i < jobs.size(); ++i)
      threads.emplace_back([&, i] { run_job(jobs[i], true, timers[i]); });
    if (!jobs.empty()) run_job(jobs[0], false, timer);
    for (auto& th : threads) th.join();
  }
  for (Job& job : jobs) {
    if (!job.error.empty()) return fail(job.error);
    if (ir_text != nullptr) *ir_text += job.ir;
  }

  // The IR is gone: the JIT links the object files and owns the code from now on. An object
  // from the cache passed its checksum, yet one that does not link or lacks a kernel (written by
  // a faulty build, say) is not trusted either: its entry is deleted, its kernels are compiled
  // afresh and everything is linked again into a new JIT.
  auto result = std::unique_ptr<JitModule>(new JitModule());
  Impl& im = *result->impl_;
  for (int attempt = 0;; ++attempt) {
    size_t culprit = jobs.size();  // the job whose object failed to link
    std::string e = im.link(host, jobs, culprit, timer);
    if (e.empty()) break;
    std::vector<size_t> redo;
    if (culprit < jobs.size() && jobs[culprit].cache.hit) {
      redo.push_back(culprit);
    } else {  // not attributable to one cached object (a clash of symbols?): all cached ones
      for (size_t i = 0; i < jobs.size(); ++i)
        if (jobs[i].cache.hit) redo.push_back(i);
    }
    if (attempt > 0 || redo.empty()) return fail(e);
    timer.step("recompile");
    for (size_t i : redo) {
      Job& job = jobs[i];
      discard(job.cache, "it does not link: " + e);
      job.cache.hit = false;
      job.cache.read = false;
      run_job(job, false, timer);
      if (!job.error.empty()) return fail(job.error);
    }
  }
  for (const std::string& k : unique_names) im.code_symbol.emplace(k, k);
  for (const auto& [name, target] : aliases) {
    im.kernels.emplace(name, im.kernels.at(target));
    im.code_symbol.emplace(name, target);
    if (std::find(optimised_names.begin(), optimised_names.end(), target) != optimised_names.end())
      optimised_names.push_back(name);
  }
  im.optimised = std::move(optimised_names);
  for (Job& job : jobs) {
    im.cache_hits += job.cache.hit ? 1 : 0;
    for (CacheDamage& d : job.cache.damage) im.cache_damage.push_back(std::move(d));
  }
  im.objects = jobs.size();
  for (const Job& job : jobs)
    if (options.keep_object_files)
      im.object_bytes.emplace_back(job.object->getBufferStart(), job.object->getBufferSize());
  return result;
}

std::unique_ptr<JitModule> JitModule::load(const std::vector<std::string>& objects,
                                           const std::vector<std::string>& symbols,
                                           std::string* error) {
  std::string ignored;
  std::string& err = error != nullptr ? *error : ignored;
  StepTimer timer;
  timer.step("target");
  HostTarget& host = host_target();
  if (host.builder == nullptr) {
    err = "no native target: " + host.error;
    return nullptr;
  }
  // one job holding every object, the first one looking up every symbol
  std::vector<Job> jobs(objects.size());
  for (size_t i = 0; i < objects.size(); ++i)
    jobs[i].object = llvm::MemoryBuffer::getMemBufferCopy(objects[i], "cached-object");
  if (jobs.empty() && !symbols.empty()) {
    err = "no object files to look the kernels up in";
    return nullptr;
  }
  std::vector<KernelSpec> named;  // names only: what link() looks up
  named.reserve(symbols.size());
  for (const std::string& s : symbols) named.push_back({s, {}, {}});
  for (const KernelSpec& k : named) jobs[0].kernels.push_back(&k);
  auto result = std::unique_ptr<JitModule>(new JitModule());
  Impl& im = *result->impl_;
  size_t culprit = jobs.size();
  if (std::string e = im.link(host, jobs, culprit, timer); !e.empty()) {
    err = e;
    return nullptr;
  }
  for (const std::string& s : symbols) im.code_symbol.emplace(s, s);
  im.objects = objects.size();
  return result;
}

std::string JitModule::code_symbol(const std::string& name) const {
  auto it = impl_->code_symbol.find(name);
  return it == impl_->code_symbol.end() ? std::string() : it->second;
}

std::string emit_object(llvm::Module& module, const std::string& cpu, std::string* error) {
  std::string ignored;
  std::string& err = error != nullptr ? *error : ignored;
  HostTarget& target = target_for(cpu);
  if (target.builder == nullptr) {
    err = target.error;
    return {};
  }
  llvm::orc::JITTargetMachineBuilder jtmb = *target.builder;
  jtmb.setCodeGenOptLevel(codegen_level(0));
  auto machine = jtmb.createTargetMachine();
  if (!machine) {
    err = message(machine.takeError());
    return {};
  }
  module.setDataLayout((*machine)->createDataLayout());
  module.setTargetTriple((*machine)->getTargetTriple().str());
  auto object = llvm::orc::SimpleCompiler(**machine)(module);
  if (!object) {
    err = message(object.takeError());
    return {};
  }
  return std::string((*object)->getBufferStart(), (*object)->getBufferSize());
}

std::string host_code_identity() {
  HostTarget& host = host_target();
  if (host.builder == nullptr) return std::string("no target: ") + host.error;
  return std::string(kCacheFormat) + " LLVM " + LLVM_VERSION_STRING + " " + host.builder->getCPU() +
         " " + host.builder->getFeatures().getString();
}

KernelFn JitModule::lookup(const std::string& name) const {
  auto it = impl_->kernels.find(name);
  return it == impl_->kernels.end() ? nullptr : it->second;
}

std::string lower_to_llvm_ir(const sym::Context& cx, std::span<const KernelSpec> kernels) {
  llvm::LLVMContext ctx;
  llvm::Module module("mbs_kernels", ctx);
  module.setTargetTriple(llvm::sys::getProcessTriple());
  if (std::string e = lower_kernels(cx, kernels, module); !e.empty()) return "; error: " + e + "\n";
  return print(module);
}

}  // namespace mbs::codegen
