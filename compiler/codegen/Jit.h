// Lowering of symbolic kernels to LLVM IR and JIT compilation with ORC LLJIT.
//
// A kernel is a named list of expressions. Its native form is
//     int32_t name(const double* v, double* out)
// where v[i] is the value of symbol i of the Context and out[k] receives output k.
// The return value is 0 when every output is finite, otherwise 1 + the index of the first
// non-finite output (a recoverable failure: the solver retries or reports that output's equation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compiler/symbolic/Expr.h"

namespace llvm {
class Module;
}

namespace mbs::codegen {

using KernelFn = int32_t (*)(const double* v, double* out);

struct KernelSpec {
  std::string name;                // a valid C identifier, unique within one module
  std::vector<sym::Expr> outputs;  // may be empty (the kernel then only returns 0)
  // Per output, the group of source equations it comes from (FlatEquation::group: the elements
  // of one for-equation or one array of components; 0: none), or empty: the structure of the
  // model that code generation keeps (JitOptions::loop_min_group).
  std::vector<uint32_t> groups = {};
};

// Kernels passed by address: a model's kernels are megabytes of outputs at 10^5 equations, so
// the compiler hands them to code generation without copying them.
using KernelRefs = std::span<const KernelSpec* const>;
// The addresses of `kernels`, for the overloads taking KernelRefs.
std::vector<const KernelSpec*> kernel_refs(std::span<const KernelSpec> kernels);

struct JitOptions {
  int opt_level = 2;  // 0..3, LLVM's optimisation pipeline level
  // A kernel with more DAG nodes than this is compiled at level 0 whatever opt_level says:
  // optimised code generation grows about quadratically with the size of one function (see
  // Jit.cpp). SIZE_MAX disables the limit.
  size_t max_optimised_kernel_nodes = 12000;
  // Budget of nodes (summed over kernels, in the order given) compiled at opt_level; the kernels
  // beyond it go to the O0 module as well. Optimised code generation of a module with many
  // outputs is superlinear (a 10-link chain: 2.0 s at O2 against 0.18 s at O0, with the same
  // run time, because its solver time is not in the kernels), so large models are compiled fast
  // and small ones well. SIZE_MAX disables the budget.
  size_t max_optimised_total_nodes = 2000;
  // A kernel with more memory operations than this (the symbols it reads plus its outputs) is
  // compiled at level 0 as well: optimised code generation is quadratic in the loads and stores
  // of one function (llc -O2 on one function: 800 stores of one value 0.32 s, 1,600 stores 2.1 s;
  // 512 loads and 512 stores 0.36 s, 800 of each 1.0 s; at O0 0.03 s), while the few nodes per
  // output of such a kernel gain little from optimisation. SIZE_MAX disables the limit.
  size_t max_optimised_kernel_memory = 512;
  // A kernel with at least this many outputs computes the outputs that share a shape (the same
  // operations on other symbols: the equations of one for-loop) by a loop over a table of their
  // symbols instead of straight-line code (LowerToLlvm.cpp): code generation then grows with the
  // number of shapes, not of outputs (the 10^5-equation chain: 6.8 s -> 0.34 s). The loops run
  // up to 20 % slower than straight-line code at O0 on multibody kernels (the 100- and
  // 1,000-link chains), at the same speed on the ODE chain of 20,000 (docs/performance.md), so
  // only kernels beyond this size take them. SIZE_MAX: never.
  size_t loop_min_outputs = 32768;
  // In a smaller kernel, the outputs of an equation group (KernelSpec::groups) with at least
  // this many outputs in the kernel take loops too: a for-equation or an array of components is
  // compiled once per shape whatever the size of the model (the first-order chain of 10^4: codegen
  // 0.6 s -> 0.09 s, docs/performance.md). The equations of the mechanics lowering have no group,
  // so multibody kernels keep their straight-line code. SIZE_MAX: never.
  size_t loop_min_group = 256;
  // Threads for the O0 modules (0: one per hardware thread). The optimised module is compiled on
  // the calling thread meanwhile.
  unsigned threads = 0;
  // Directory of the object cache (empty: none). Compiled object files are stored there under a
  // hash of their IR, levels, host CPU and LLVM version, and reused by later compilations of the
  // same kernels (a model compiled again skips optimisation and code generation). Entries are
  // verified before use (ObjectCache.h); a damaged one is deleted and its kernels are compiled
  // afresh (JitModule::cache_damage()).
  std::string cache_dir;
  // Keep a copy of the object files for object_files()/take_object_files() (the model cache
  // stores them, an FMU links them). Off by default: the JIT owns the code, and a copy would
  // double the memory of every compiled model for its lifetime.
  bool keep_object_files = false;
  // The CPU the kernels are compiled for, by LLVM's name ("x86-64", "x86-64-v3", "skylake"):
  // "" = the host's, with all its features. Code for a baseline CPU runs on the host as well
  // (and in an FMU on other machines: tools/fmu/Export.h uses "x86-64").
  std::string cpu;
};

// An object cache entry that was found unusable: its kernels were compiled afresh (and stored
// again, best effort).
struct CacheDamage {
  std::string path;          // the entry's file
  std::string reason;        // what was wrong with it ("checksum mismatch", ...)
  std::string delete_error;  // "" when it was deleted; otherwise why it could not be
};

// Owns the LLJIT instance (and with it the code of every kernel). Kernels stay valid as long as
// the JitModule lives. Thread-safe to call kernels concurrently; compile() itself is not.
class JitModule {
 public:
  ~JitModule();

  // Lowers all kernels into one LLVM module, optimises and JIT-compiles it. On failure returns
  // nullptr and sets *error. When ir_text is non-null it receives the optimised IR as text.
  static std::unique_ptr<JitModule> compile(const sym::Context& cx,
                                            std::span<const KernelSpec> kernels,
                                            const JitOptions& options, std::string* error,
                                            std::string* ir_text = nullptr);
  // The same, for kernels that the caller keeps (nothing is copied; they must live until
  // compile() returns).
  static std::unique_ptr<JitModule> compile(const sym::Context& cx, KernelRefs kernels,
                                            const JitOptions& options, std::string* error,
                                            std::string* ir_text = nullptr);

  // Links object files made by compile() (object_files(), e.g. from a cache of the whole model)
  // into a new JIT without compiling anything; `symbols` are the kernels to look up. On failure
  // returns nullptr and sets *error.
  static std::unique_ptr<JitModule> load(const std::vector<std::string>& objects,
                                         const std::vector<std::string>& symbols,
                                         std::string* error);

  // The symbol of the code of a kernel given to compile(): its own name, or the name of an
  // identical kernel compiled in its place; "" if unknown.
  std::string code_symbol(const std::string& name) const;

  // The native entry point of a kernel given to compile(), or nullptr if unknown.
  KernelFn lookup(const std::string& name) const;
  // The object files linked (relocatable ELF, position-independent code, host CPU), in link
  // order: the kernels' code for a shared library or a cache of the whole compiled model. Only
  // with JitOptions::keep_object_files (else empty); take_object_files() moves them out.
  std::vector<std::string> object_files() const;
  std::vector<std::string> take_object_files();
  // The kernels (names given to compile()) compiled at JitOptions::opt_level; the others were
  // compiled at level 0 (the limits of JitOptions), or opt_level was 0.
  std::vector<std::string> optimised_kernels() const;
  // Object files linked, and how many of them came from the cache.
  size_t objects() const;
  size_t cache_hits() const;
  // The cache entries that were damaged (the library prints nothing: the caller reports them).
  const std::vector<CacheDamage>& cache_damage() const;

 private:
  JitModule();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What the code compiled here depends on besides its IR: the LLVM version, the host CPU and its
// features (for cache keys).
std::string host_code_identity();

// Compiles a module built outside the kernels' lowering (an FMU's embedding object:
// tools/fmu/Embed.h) to a relocatable object for the same target as the kernels: `cpu` as
// JitOptions::cpu ("" = the host's; an unknown name is an error), position-independent, without
// optimisation. Sets the module's data layout and triple. Returns the object's bytes, or "" with
// *error set.
std::string emit_object(llvm::Module& module, const std::string& cpu, std::string* error);

// Lowers kernels to textual LLVM IR without compiling (for --emit=ir and tests).
std::string lower_to_llvm_ir(const sym::Context& cx, std::span<const KernelSpec> kernels);

}  // namespace mbs::codegen
