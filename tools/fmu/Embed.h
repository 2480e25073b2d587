// The embedding object of an exported FMU: the data its runtime (tools/fmu/blob) reads to become
// the model -- the model image (runtime/model/ModelImage.h), the export's configuration text
// (runtime/fmi) and the table from kernel symbols to their code -- as one relocatable ELF object
// that is linked with the kernels' objects and the runtime blob (tools/fmu/Link.h).
//
// It defines, with default visibility (the library's version script makes them local):
//   const unsigned char mbs_fmu_model_image[];  const uint64_t mbs_fmu_model_image_size;
//   const char mbs_fmu_config[];                (NUL-terminated)
//   const struct { const char* symbol; int32_t (*fn)(const double*, double*); }
//       mbs_fmu_kernels[];                      const uint64_t mbs_fmu_kernel_count;
// The kernel table refers to the kernels' symbols, so the link fails (--no-undefined) when an
// object file is missing: a library never loads with a kernel unresolved.
#pragma once

#include <string>
#include <vector>

namespace mbs::fmu {

// The object (bytes of a relocatable x86-64 ELF file, position-independent), or "" with *error
// set. `cpu`: as codegen::JitOptions::cpu ("" = the host's).
std::string embedding_object(const std::string& model_image, const std::string& config,
                             const std::vector<std::string>& kernel_symbols, const std::string& cpu,
                             std::string* error);

}  // namespace mbs::fmu
