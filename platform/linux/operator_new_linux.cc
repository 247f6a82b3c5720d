// libinprof.so's own operator new and delete (linked into the shared library only, and local to
// it by cmake/libinprof.map: the program's own operator new is untouched, and binds to nothing
// here). Every allocation the library's code makes, standard containers included, comes here.
//
// The profiler's threads get the own heap (memory/own_heap.h): they never call malloc, so glibc
// never gives them arenas. The program's threads calling into the library get malloc, as before.
// A block may cross over: a record a program thread made is freed by the writer. The own heap
// recognises its blocks by address; a malloc'd block freed by a profiler thread is put aside (a
// free, too, would give that thread an arena: glibc makes its per-thread cache on first use) and
// given to free() by the next program thread that allocates or frees here.
#include <atomic>
#include <cstdlib>
#include <new>

#include "memory/own_heap.h"
#include "threads/profiler_threads.h"

namespace inprof::internal {
namespace {

struct Deferred {
  Deferred* next;
};
std::atomic<Deferred*> g_deferred{nullptr};

void defer(void* block) {
  auto* d = static_cast<Deferred*>(block);
  d->next = g_deferred.load(std::memory_order_relaxed);
  while (!g_deferred.compare_exchange_weak(d->next, d, std::memory_order_release,
                                           std::memory_order_relaxed)) {
  }
}

void free_deferred() {
  if (g_deferred.load(std::memory_order_relaxed) == nullptr) return;
  Deferred* d = g_deferred.exchange(nullptr, std::memory_order_acquire);
  while (d != nullptr) {
    Deferred* next = d->next;
    std::free(d);
    d = next;
  }
}

void* allocate(size_t bytes, size_t alignment) {
  if (on_profiler_thread()) return own_heap_allocate(bytes, alignment);
  free_deferred();
  if (bytes == 0) bytes = 1;
  if (alignment <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) return std::malloc(bytes);
  void* block = nullptr;
  return posix_memalign(&block, alignment, bytes) == 0 ? block : nullptr;
}

void* allocate_or_throw(size_t bytes, size_t alignment) {
  void* block = allocate(bytes, alignment);
  if (block == nullptr) throw std::bad_alloc();
  return block;
}

void release(void* block) {
  if (block == nullptr || own_heap_release(block)) return;
  if (on_profiler_thread()) {
    defer(block);
    return;
  }
  std::free(block);
  free_deferred();
}

}  // namespace
}  // namespace inprof::internal

using inprof::internal::allocate;
using inprof::internal::allocate_or_throw;
using inprof::internal::release;

constexpr size_t kDefault = __STDCPP_DEFAULT_NEW_ALIGNMENT__;

void* operator new(size_t n) { return allocate_or_throw(n, kDefault); }
void* operator new[](size_t n) { return allocate_or_throw(n, kDefault); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return allocate(n, kDefault); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return allocate(n, kDefault); }
void* operator new(size_t n, std::align_val_t a) {
  return allocate_or_throw(n, static_cast<size_t>(a));
}
void* operator new[](size_t n, std::align_val_t a) {
  return allocate_or_throw(n, static_cast<size_t>(a));
}
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<size_t>(a));
}
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<size_t>(a));
}

void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, size_t) noexcept { release(p); }
void operator delete[](void* p, size_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
