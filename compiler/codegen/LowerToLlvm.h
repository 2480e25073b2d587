// Lowering of kernels into an LLVM module (internal to mbs_codegen; see Jit.h for the API).
#pragma once

#include <span>
#include <string>

#include "compiler/codegen/Jit.h"

namespace llvm {
class Module;
}

namespace mbs::codegen {

// Adds one function `i32 name(ptr v, ptr out)` per kernel to `module` (unoptimised IR, one basic
// block per kernel). Returns an empty string on success, otherwise the reason it failed (an invalid
// or duplicate kernel name); the module is then incomplete. When `emitted_nodes` is non-null it
// receives the number of DAG nodes emitted, summed over the kernels (the size of the code).
std::string lower_kernels(const sym::Context& cx, std::span<const KernelSpec> kernels,
                          llvm::Module& module, size_t* emitted_nodes = nullptr);

}  // namespace mbs::codegen
