// A replaced global operator new that counts allocations while g_counting is set, for the
// tests that check that something does not allocate (test_runtime_alloc, test_objectives).
// Include it in exactly one file of a test executable. Every form of new and delete, nothrow
// included (LLVM's memory buffers use it), allocates with malloc and frees with free, so
// AddressSanitizer sees no mismatch.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace mbs::testalloc {
inline std::atomic<bool> g_counting{false};
inline std::atomic<int64_t> g_allocations{0};
inline std::atomic<int64_t> g_bytes{0};  // bytes requested while counting

inline void* counted(std::size_t n) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1);
    g_bytes.fetch_add(static_cast<int64_t>(n));
  }
  return std::malloc(n ? n : 1);
}
inline void* counted_or_throw(std::size_t n) {
  if (void* p = counted(n)) return p;
  throw std::bad_alloc();
}
}  // namespace mbs::testalloc

void* operator new(std::size_t n) {
  return mbs::testalloc::counted_or_throw(n);
}
void* operator new[](std::size_t n) {
  return mbs::testalloc::counted_or_throw(n);
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return mbs::testalloc::counted(n);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return mbs::testalloc::counted(n);
}
// The replacements free what the replacements of new got from malloc; GCC, inlining both at
// -O1 and above, takes the pair for a mismatch (-Wmismatched-new-delete).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop
