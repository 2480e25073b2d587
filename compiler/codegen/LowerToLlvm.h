// Lowering of kernels into an LLVM module (internal to mbs_codegen; see Jit.h for the API).
#pragma once

#include <span>
#include <string>

#include "compiler/codegen/Jit.h"

namespace llvm {
class Module;
}

namespace mbs::codegen {

// Checks that kernel names are valid C identifiers, distinct, and not names of C math library
// functions. Returns "" or the first problem.
std::string check_kernel_names(KernelRefs kernels);

// Adds one function `i32 name(ptr v, ptr out)` per kernel to `module` (unoptimised IR; internal
// functions for the parts of a large kernel and for the loops over its repeated outputs, in
// kernels of at least `loop_min_outputs` outputs, and for the outputs of an equation group of at
// least `loop_min_group` in any kernel: JitOptions). Returns an empty string on
// success, otherwise the reason it failed (the problem check_kernel_names reports); the module is
// then incomplete.
std::string lower_kernels(const sym::Context& cx, KernelRefs kernels, llvm::Module& module,
                          size_t loop_min_outputs = JitOptions{}.loop_min_outputs,
                          size_t loop_min_group = JitOptions{}.loop_min_group);
std::string lower_kernels(const sym::Context& cx, std::span<const KernelSpec> kernels,
                          llvm::Module& module,
                          size_t loop_min_outputs = JitOptions{}.loop_min_outputs,
                          size_t loop_min_group = JitOptions{}.loop_min_group);

}  // namespace mbs::codegen
