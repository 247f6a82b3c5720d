#include "next_allocator_linux.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>

namespace inprof::internal {
namespace {

std::atomic<int> g_stage{0};  // 0: not started, 1: being looked up, 2: done
std::atomic<AllocatorRoute> g_route{AllocatorRoute::kUnresolved};
NextAllocator g_next;  // written once, before g_stage becomes 2
__attribute__((tls_model("initial-exec"))) constinit thread_local bool t_resolving = false;

// glibc's blocks made while the allocator was looked up. A handful at most (dlsym's error
// state); a foreign allocator's free must never see them.
constexpr int kBootstrapSlots = 64;
std::atomic<uintptr_t> g_bootstrap[kBootstrapSlots];
size_t g_bootstrap_size[kBootstrapSlots];  // written by the slot's claimer, before it hands out
std::atomic<int> g_bootstrap_live{0};

const void* module_of(const void* code) {
  Dl_info info;
  if (code == nullptr || dladdr(code, &info) == 0) return nullptr;
  return info.dli_fbase;
}

// Where definitions are looked up: after the interposer (RTLD_NEXT), or, when the program
// itself (or a library before the interposer) defines malloc, from the start (RTLD_DEFAULT).
// Then the hooks see only what that allocator leaves to them (C++ new and delete, say), and
// those must reach it too.
void* g_scope = RTLD_NEXT;

template <typename F>
F definition(const char* name) {
  return reinterpret_cast<F>(dlsym(g_scope, name));
}

// A definition from the allocator's own library, or none (glibc's would make glibc's blocks).
template <typename F>
F own(const void* home, const char* name) {
  F f = definition<F>(name);
  return module_of(reinterpret_cast<const void*>(f)) == home ? f : nullptr;
}

AllocatorRoute look_up(NextAllocator& next, const void* interposer_code) {
  const auto first = reinterpret_cast<const void*>(dlsym(RTLD_DEFAULT, "malloc"));
  if (first != nullptr && module_of(first) != module_of(interposer_code)) g_scope = RTLD_DEFAULT;
  next.malloc = definition<void* (*)(size_t)>("malloc");
  const void* libc = module_of(reinterpret_cast<const void*>(&gnu_get_libc_version));
  const void* home = module_of(reinterpret_cast<const void*>(next.malloc));
  if (next.malloc == nullptr || home == nullptr || home == libc) return AllocatorRoute::kGlibc;
  next.free = own<void (*)(void*)>(home, "free");
  // An allocator whose malloc and free live apart is not one we know how to follow.
  if (next.free == nullptr) return AllocatorRoute::kGlibc;
  next.calloc = own<void* (*)(size_t, size_t)>(home, "calloc");
  next.realloc = own<void* (*)(void*, size_t)>(home, "realloc");
  next.memalign = own<void* (*)(size_t, size_t)>(home, "memalign");
  next.posix_memalign = own<int (*)(void**, size_t, size_t)>(home, "posix_memalign");
  next.aligned_alloc = own<void* (*)(size_t, size_t)>(home, "aligned_alloc");
  next.valloc = own<void* (*)(size_t)>(home, "valloc");
  next.pvalloc = own<void* (*)(size_t)>(home, "pvalloc");
  next.usable_size = own<size_t (*)(void*)>(home, "malloc_usable_size");
  // Without realloc the interposer could not move a block the allocator's way.
  if (next.realloc == nullptr) return AllocatorRoute::kGlibc;
  return AllocatorRoute::kForeign;
}

}  // namespace

AllocatorRoute resolve_next_allocator(const void* interposer_code) {
  if (g_stage.load(std::memory_order_acquire) == 2) return g_route.load(std::memory_order_relaxed);
  if (t_resolving) return AllocatorRoute::kUnresolved;
  int expected = 0;
  if (g_stage.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    t_resolving = true;
    NextAllocator next;
    const AllocatorRoute route = look_up(next, interposer_code);
    if (route == AllocatorRoute::kForeign) g_next = next;
    g_route.store(route, std::memory_order_relaxed);
    t_resolving = false;
    g_stage.store(2, std::memory_order_release);
    return route;
  }
  while (g_stage.load(std::memory_order_acquire) != 2) sched_yield();
  return g_route.load(std::memory_order_relaxed);
}

bool resolving_next_allocator() { return t_resolving; }

const NextAllocator& next_allocator() { return g_next; }

bool remember_bootstrap_block(void* block, size_t size) {
  const auto address = reinterpret_cast<uintptr_t>(block);
  for (int i = 0; i < kBootstrapSlots; ++i) {
    uintptr_t empty = 0;
    if (g_bootstrap[i].compare_exchange_strong(empty, address, std::memory_order_acq_rel)) {
      g_bootstrap_size[i] = size;
      g_bootstrap_live.fetch_add(1, std::memory_order_release);
      return true;
    }
  }
  return false;
}

bool forget_bootstrap_block(void* block, size_t* size) {
  if (g_bootstrap_live.load(std::memory_order_acquire) == 0) return false;
  const auto address = reinterpret_cast<uintptr_t>(block);
  for (int i = 0; i < kBootstrapSlots; ++i) {
    if (g_bootstrap[i].load(std::memory_order_acquire) != address) continue;
    if (size != nullptr) *size = g_bootstrap_size[i];
    g_bootstrap[i].store(0, std::memory_order_release);
    g_bootstrap_live.fetch_sub(1, std::memory_order_release);
    return true;
  }
  return false;
}

bool is_bootstrap_block(const void* block, size_t* size) {
  if (g_bootstrap_live.load(std::memory_order_acquire) == 0) return false;
  const auto address = reinterpret_cast<uintptr_t>(block);
  for (int i = 0; i < kBootstrapSlots; ++i) {
    if (g_bootstrap[i].load(std::memory_order_acquire) != address) continue;
    if (size != nullptr) *size = g_bootstrap_size[i];
    return true;
  }
  return false;
}

}  // namespace inprof::internal
