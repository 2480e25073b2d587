// The model an FMU carries, loaded once per process (Embedded.h).
#include "tools/fmu/blob/Embedded.h"

#include <exception>
#include <set>
#include <string_view>
#include <unordered_map>

extern "C" {
// Defined by the exporter's embedding object; weak: absent in libraries linked without one.
__attribute__((weak, visibility("hidden"))) extern const unsigned char mbs_fmu_model_image[];
__attribute__((weak, visibility("hidden"))) extern const uint64_t mbs_fmu_model_image_size;
__attribute__((weak, visibility("hidden"))) extern const char mbs_fmu_config[];
__attribute__((weak, visibility("hidden"))) extern const MbsFmuKernel mbs_fmu_kernels[];
__attribute__((weak, visibility("hidden"))) extern const uint64_t mbs_fmu_kernel_count;
}

namespace mbs::fmu_blob {

namespace {

Loaded load() {
  Loaded l;
  if (!mbs_fmu_model_image || !&mbs_fmu_model_image_size || !mbs_fmu_config || !mbs_fmu_kernels ||
      !&mbs_fmu_kernel_count) {
    l.error = "no model embedded in this library";
    return l;
  }
  try {
    std::unordered_map<std::string, rt::KernelFn> code;
    for (uint64_t k = 0; k < mbs_fmu_kernel_count; ++k)
      if (mbs_fmu_kernels[k].symbol) code[mbs_fmu_kernels[k].symbol] = mbs_fmu_kernels[k].fn;
    auto e = std::make_shared<rt::fmi::EmbeddedModel>();
    const std::string_view image(reinterpret_cast<const char*>(mbs_fmu_model_image),
                                 static_cast<size_t>(mbs_fmu_model_image_size));
    l.error = rt::fmi::load_embedded(
        image, mbs_fmu_config,
        [&](const std::string& symbol) -> rt::KernelFn {
          const auto it = code.find(symbol);
          return it == code.end() ? nullptr : it->second;
        },
        *e);
    if (l.error.empty()) l.fmu = std::move(e);
  } catch (const std::exception& ex) {
    l.error = std::string("loading the embedded model: ") + ex.what();
  }
  return l;
}

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

std::set<Instance*>& registry() {
  static std::set<Instance*> s;
  return s;
}

}  // namespace

const Loaded& embedded() {
  static const Loaded loaded = load();  // thread-safe initialization
  return loaded;
}

void register_instance(Instance* i) {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  registry().insert(i);
}

void unregister_instance(Instance* i) {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  registry().erase(i);
}

Instance* find_instance(void* handle) {
  if (!handle) return nullptr;
  const std::lock_guard<std::mutex> lock(registry_mutex());
  const auto it = registry().find(static_cast<Instance*>(handle));
  return it == registry().end() ? nullptr : *it;
}

}  // namespace mbs::fmu_blob
