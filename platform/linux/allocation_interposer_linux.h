// The allocation interposer's parts (allocation_hooks_linux.cc: the hooks and the recording of
// sampled blocks; allocation_routes_linux.cc: the allocator every call goes to) share this state.
// Internal to libinprof_allocations (hidden). What the fast path of every malloc and free reads is
// inline here: the thread-local state is constinit, so no TU pays a guard or a TLS wrapper call.
#ifndef INPROF_PLATFORM_LINUX_ALLOCATION_INTERPOSER_LINUX_H_
#define INPROF_PLATFORM_LINUX_ALLOCATION_INTERPOSER_LINUX_H_

#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "allocations/address_set.h"
#include "allocations/block_tag.h"
#include "allocations/sampling.h"
#include "next_allocator_linux.h"

extern "C" {
void* __libc_malloc(size_t size);
void __libc_free(void* block);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* block, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void* __libc_valloc(size_t size);
void* __libc_pvalloc(size_t size);
}

namespace inprof::internal::interposer {

// Sampled blocks of at least this many bytes less the tag's 16 are not tagged but kept in the set;
// a free asks the set only for a chunk of at least this size (which such a block always has:
// glibc's chunk is the size asked plus 8, rounded up to 16).
constexpr size_t kLargeBytes = 4096;
constexpr size_t kLargestTagged = kLargeBytes - BlockTag::kMinOffset - 1;

extern std::atomic<bool> g_enabled;
// Once set, stays: a sampled block (tagged, or in the set) may be freed at any time later.
extern std::atomic<bool> g_sampled_blocks;
extern SampledAddressSet g_set;  // the recording session's large sampled blocks

// Constant-initialized (constinit: all zero) and trivially destructible: valid from a thread's
// first instruction to its last, with no guard. (Without constinit, AllocationRng's member
// initializer gave t_state a dynamic initializer: every access then called __tls_get_addr for its
// guard variable, which the initial-exec model does not cover — a function call in the fast path
// of every malloc.)
struct ThreadState {
  int64_t countdown = 0;
  AllocationRng rng;
  uint64_t tid = 0;
  bool seeded = false;
  bool busy = false;      // inside the recording path: every allocator call goes straight to glibc
  bool excluded = false;  // a profiler thread
};
extern __attribute__((tls_model("initial-exec"))) constinit thread_local ThreadState t_state;

inline size_t page_size() { return static_cast<size_t>(getpagesize()); }

inline bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

// The shapes of allocation a sampled call may need, with each allocator's plain way of making each.
enum class Shape : uint8_t { kMalloc, kCalloc, kAligned, kValloc, kPvalloc };

// Whose allocator every call goes to, known from the first call on (next_allocator_linux.h).
// Every hook asks first: anything but glibc's goes out of line.
extern std::atomic<AllocatorRoute> g_route;
inline bool glibc_route() {
  return g_route.load(std::memory_order_relaxed) == AllocatorRoute::kGlibc;
}
inline bool foreign_route() {
  return g_route.load(std::memory_order_relaxed) == AllocatorRoute::kForeign;
}
// The route, looked up if nobody has yet. kUnresolved: this thread is looking it up (inside
// dlsym), and gets glibc's blocks, remembered as such.
AllocatorRoute settle_route();

// Every hook's way when the route is not glibc's (allocation_routes_linux.cc).
void* routed_allocation(Shape shape, size_t size, size_t alignment, uint8_t kind, void* caller);
void* routed_reallocate(void* block, size_t size, void* caller);
void routed_release(void* block);
size_t routed_usable_size(void* block);

// glibc's malloc_usable_size (it has no __libc_ name): looked up once, at load or first use.
size_t glibc_usable_size(void* block);
// A block of `shape` from glibc, from the route's allocator (plain), with no sampling.
void* glibc_plain(Shape shape, size_t size, size_t alignment);
void* plain(Shape shape, size_t size, size_t alignment);
void* plain_realloc(void* block, size_t size);

// The word before a block the program hands back: for glibc's blocks its chunk header (which
// glibc reads next), for tagged ones their tag. Not instrumented: a sanitizer's allocator puts a
// redzone there (the interposer is not used under one, but may be loaded).
__attribute__((no_sanitize("address", "thread"))) inline uint64_t word_before(const void* block) {
  return BlockTag::word_before(block);
}
inline bool tagged(uint64_t word, BlockTag& tag) { return BlockTag::decode(word, tag); }
// A chunk header's size (less its three flag bits) says whether the block may be in the set.
inline bool maybe_in_set(uint64_t word) {
  return (word & ~uint64_t(7)) >= kLargeBytes && g_set.live() != 0;
}

// The countdown before the allocation: while it stays positive (nearly always) the caller
// tail-calls glibc, with no frame of its own.
inline bool countdown_ends(size_t size) {
  return (t_state.countdown -= static_cast<int64_t>(size)) <= 0;
}

// The recording paths (allocation_hooks_linux.cc), out of line.
void* sampled_allocation(Shape shape, size_t size, size_t alignment, uint8_t kind, void* caller);
void* sampled_reallocation(void* block, size_t size, void* caller);
void free_tagged(void* user, BlockTag tag);
void release_large(void* block);
void* reallocate(void* block, size_t size, void* caller);

inline void release(void* block) {
  if (!glibc_route()) [[unlikely]]
    return routed_release(block);
  if (block != nullptr && g_sampled_blocks.load(std::memory_order_relaxed)) {
    const uint64_t word = word_before(block);
    BlockTag tag;
    if (tagged(word, tag)) return free_tagged(block, tag);
    if (maybe_in_set(word)) release_large(block);
  }
  __libc_free(block);
}

}  // namespace inprof::internal::interposer

#endif  // INPROF_PLATFORM_LINUX_ALLOCATION_INTERPOSER_LINUX_H_
