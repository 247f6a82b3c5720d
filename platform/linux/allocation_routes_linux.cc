// The allocator every call of the interposer goes to (next_allocator_linux.h): glibc's through
// its __libc_* functions, or one the program brings in (jemalloc, tcmalloc), every call through
// it; and glibc's blocks made while a thread looks the allocator up (inside dlsym).
#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>

#include <cstring>

#include "allocation_interposer_linux.h"
#include "allocations/allocation_sink.h"

namespace inprof::internal::interposer {

std::atomic<AllocatorRoute> g_route{AllocatorRoute::kUnresolved};

AllocatorRoute settle_route() {
  AllocatorRoute route = g_route.load(std::memory_order_relaxed);
  if (route == AllocatorRoute::kUnresolved) {
    route = inprof::internal::resolve_next_allocator(reinterpret_cast<const void*>(&settle_route));
    if (route != AllocatorRoute::kUnresolved) g_route.store(route, std::memory_order_relaxed);
  }
  return route;
}

namespace {
using UsableSize = size_t (*)(void*);
std::atomic<UsableSize> g_glibc_usable_size{nullptr};
}  // namespace

size_t glibc_usable_size(void* block) {
  UsableSize usable = g_glibc_usable_size.load(std::memory_order_acquire);
  if (usable == nullptr) {
    usable = reinterpret_cast<UsableSize>(dlsym(RTLD_NEXT, "malloc_usable_size"));
    g_glibc_usable_size.store(usable, std::memory_order_release);
  }
  return usable != nullptr ? usable(block) : 0;
}

void* glibc_plain(Shape shape, size_t size, size_t alignment) {
  switch (shape) {
    case Shape::kMalloc:
      return __libc_malloc(size);
    case Shape::kCalloc:
      return __libc_calloc(1, size);
    case Shape::kAligned:
      return __libc_memalign(alignment, size);
    case Shape::kValloc:
      return __libc_valloc(size);
    case Shape::kPvalloc:
      return __libc_pvalloc(size);
  }
  return nullptr;
}

namespace {

// An aligned block of the foreign allocator's, by whichever of its functions it has.
void* foreign_aligned(size_t alignment, size_t size) {
  const auto& next = next_allocator();
  if (next.memalign != nullptr) return next.memalign(alignment, size);
  if (next.posix_memalign != nullptr) {
    void* block = nullptr;
    size_t asked = alignment < sizeof(void*) ? sizeof(void*) : alignment;
    const int error = next.posix_memalign(&block, asked, size);
    if (error == 0) return block;
    errno = error;
    return nullptr;
  }
  if (next.aligned_alloc != nullptr) {
    return next.aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
  }
  return __libc_memalign(alignment, size);  // what the program would get without the interposer
}

// The foreign allocator's plain way of making each shape; what it lacks, made of what it has
// (never glibc's: the block would go back to the foreign allocator).
void* foreign_plain(Shape shape, size_t size, size_t alignment) {
  const auto& next = next_allocator();
  switch (shape) {
    case Shape::kMalloc:
      return next.malloc(size);
    case Shape::kCalloc:
      if (next.calloc != nullptr) return next.calloc(1, size);
      if (void* block = next.malloc(size)) return std::memset(block, 0, size);
      return nullptr;
    case Shape::kAligned:
      return foreign_aligned(alignment, size);
    case Shape::kValloc:
      return next.valloc != nullptr ? next.valloc(size) : foreign_aligned(page_size(), size);
    case Shape::kPvalloc: {
      if (next.pvalloc != nullptr) return next.pvalloc(size);
      const size_t rounded = (size + page_size() - 1) & ~(page_size() - 1);
      if (rounded < size) {
        errno = ENOMEM;
        return nullptr;
      }
      return foreign_aligned(page_size(), rounded == 0 ? page_size() : rounded);
    }
  }
  return nullptr;
}

}  // namespace

void* plain(Shape shape, size_t size, size_t alignment) {
  return foreign_route() ? foreign_plain(shape, size, alignment)
                         : glibc_plain(shape, size, alignment);
}

void* plain_realloc(void* block, size_t size) {
  return foreign_route() ? next_allocator().realloc(block, size) : __libc_realloc(block, size);
}

// The routes other than glibc's. While this thread looks the allocator up (kUnresolved), glibc's
// blocks, remembered; with a foreign allocator, every call through it, every sampled block at its
// own size and in the set (the word before a foreign block is not ours to read: nothing may be
// there, or nothing mapped), and glibc's bootstrap blocks given back to glibc.
using inprof::internal::forget_bootstrap_block;
using inprof::internal::is_bootstrap_block;
using inprof::internal::remember_bootstrap_block;

__attribute__((noinline)) void* routed_allocation(Shape shape, size_t size, size_t alignment,
                                                  uint8_t kind, void* caller) {
  if (settle_route() == AllocatorRoute::kUnresolved) {
    void* block = glibc_plain(shape, size, alignment);
    if (block != nullptr) remember_bootstrap_block(block, size);
    return block;
  }
  if (enabled() && countdown_ends(size)) {
    return sampled_allocation(shape, size, alignment, kind, caller);
  }
  return plain(shape, size, alignment);
}

__attribute__((noinline)) void routed_release(void* block) {
  if (block == nullptr) return;
  const AllocatorRoute route = settle_route();
  if (route == AllocatorRoute::kUnresolved || forget_bootstrap_block(block)) {
    return __libc_free(block);
  }
  if (route == AllocatorRoute::kGlibc) return release(block);
  if (g_sampled_blocks.load(std::memory_order_relaxed) && g_set.live() != 0) {
    release_large(block);
  }
  next_allocator().free(block);
}

__attribute__((noinline)) void* routed_reallocate(void* block, size_t size, void* caller) {
  const AllocatorRoute route = settle_route();
  size_t old_size = 0;
  if (route == AllocatorRoute::kUnresolved) {
    const bool known = block != nullptr && forget_bootstrap_block(block, &old_size);
    void* fresh = __libc_realloc(block, size);
    if (fresh != nullptr) {
      remember_bootstrap_block(fresh, size);
    } else if (known && size != 0) {
      remember_bootstrap_block(block, old_size);  // failed: the old block stays
    }
    return fresh;
  }
  if (route == AllocatorRoute::kGlibc) return reallocate(block, size, caller);
  if (block != nullptr && forget_bootstrap_block(block, &old_size)) {
    // glibc's block: moved into the allocator's.
    if (size == 0) {
      __libc_free(block);
      return nullptr;
    }
    void* fresh = routed_allocation(Shape::kMalloc, size, 0, kInprofAllocRealloc, caller);
    if (fresh == nullptr) {
      remember_bootstrap_block(block, old_size);
      return nullptr;
    }
    std::memcpy(fresh, block, old_size < size ? old_size : size);
    __libc_free(block);
    return fresh;
  }
  if (block == nullptr)
    return routed_allocation(Shape::kMalloc, size, 0, kInprofAllocRealloc, caller);
  if (g_sampled_blocks.load(std::memory_order_relaxed) && g_set.live() != 0) {
    release_large(block);  // its new block is sampled anew, or not
  }
  if (!enabled() || size == 0 || !countdown_ends(size)) {
    return next_allocator().realloc(block, size);
  }
  return sampled_reallocation(block, size, caller);
}

__attribute__((noinline)) size_t routed_usable_size(void* block) {
  const AllocatorRoute route = settle_route();
  size_t size = 0;
  if (block == nullptr) return 0;
  if (is_bootstrap_block(block, &size)) return size;  // what was asked: all that is known
  if (route != AllocatorRoute::kForeign) return glibc_usable_size(block);
  const auto usable = next_allocator().usable_size;
  return usable != nullptr ? usable(block) : 0;
}

}  // namespace inprof::internal::interposer
