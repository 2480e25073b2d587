// The model an FMU carries, and the instances of its FMI functions (Fmi2.cpp, Fmi3.cpp).
//
// The exporter's embedding object defines, with hidden visibility (tools/fmu/Export):
//   mbs_fmu_model_image[], mbs_fmu_model_image_size   the model image (runtime/model/ModelImage.h)
//   mbs_fmu_config[]                                   the configuration text, NUL-terminated
//                                                      (runtime/fmi/Config.h)
//   mbs_fmu_kernels[], mbs_fmu_kernel_count            symbol -> code of every kernel
// They are weak here: a library linked without them (the link tests) loads, and instantiation
// reports "no model embedded".
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/fmi/Component.h"
#include "runtime/fmi/Embedded.h"

extern "C" {
struct MbsFmuKernel {
  const char* symbol;
  int32_t (*fn)(const double*, double*);
};
}

namespace mbs::fmu_blob {

// Loaded once per process, on first use (thread-safe).
struct Loaded {
  std::shared_ptr<const rt::fmi::EmbeddedModel> fmu;
  std::string error;  // "" when fmu is set
};
const Loaded& embedded();

// One instance of the FMI API: what the importer's handle points to.
struct Instance {
  static constexpr uint64_t kMagic = 0x6d62732d666d7521;  // "mbs-fmu!"
  uint64_t magic = kMagic;
  int fmi_version = 2;
  std::unique_ptr<rt::fmi::Component> component;
  // FMI 2's callbacks, FMI 3's log callback and environment (as void pointers: the C types of
  // each standard live in its own file)
  void* environment = nullptr;
  void* logger = nullptr;
};

// The instances alive in this process: a handle the importer passes is used only if it is one
// of them (a null, freed or foreign pointer is refused, never dereferenced).
void register_instance(Instance* i);
void unregister_instance(Instance* i);
Instance* find_instance(void* handle);

}  // namespace mbs::fmu_blob
