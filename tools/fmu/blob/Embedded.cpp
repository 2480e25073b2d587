// The model an FMU carries, loaded once per process (Embedded.h).
#include "tools/fmu/blob/Embedded.h"

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
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

// Changes whenever an instance is registered or unregistered (under the mutex): a handle found
// once stays valid until then, so a thread that calls with the same handle again (every doStep
// and GetReal of a co-simulation loop) skips the lock and the lookup.
std::atomic<uint64_t>& registry_generation() {
  static std::atomic<uint64_t> g{0};
  return g;
}

}  // namespace

const Loaded& embedded() {
  static const Loaded loaded = load();  // thread-safe initialization
  return loaded;
}

void register_instance(Instance* i) {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  registry().insert(i);
  registry_generation().fetch_add(1, std::memory_order_release);
}

void unregister_instance(Instance* i) {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  registry().erase(i);
  registry_generation().fetch_add(1, std::memory_order_release);
}

Instance* find_instance(void* handle) {
  if (!handle) return nullptr;
  thread_local void* last_handle = nullptr;
  thread_local uint64_t last_generation = ~uint64_t{0};
  const uint64_t generation = registry_generation().load(std::memory_order_acquire);
  if (handle == last_handle && generation == last_generation) return static_cast<Instance*>(handle);
  const std::lock_guard<std::mutex> lock(registry_mutex());
  const auto it = registry().find(static_cast<Instance*>(handle));
  if (it == registry().end()) return nullptr;
  last_handle = handle;
  last_generation = registry_generation().load(std::memory_order_relaxed);
  return *it;
}

}  // namespace mbs::fmu_blob
