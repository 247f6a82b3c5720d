// libinprof_allocations: the allocation interposer (docs/design/allocations.md, section 2). It
// replaces the malloc family and C++ new/delete, forwards every call to glibc's own allocator
// (the __libc_* functions, bound at load time: no dlsym bootstrap), and, while a session records
// allocations, samples them by bytes (lib/allocations/sampling.h) and hands the sampled ones to
// the core's sink (lib/allocations/allocation_sink.h). Loaded only when the user asks for
// allocation profiling (LD_PRELOAD by `inprof record --allocations`, or linked through
// inprof::allocations): libinprof itself never replaces a libc function.
//
// Off (no session records): one relaxed load, then glibc's function. On: a thread-local byte
// countdown and a branch; the rare sampled allocation goes out of line. The recording path
// never allocates and is never re-entered on a thread (`busy`); the profiler's own threads are
// excluded; a fork child starts with recording off.
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include "allocations/address_set.h"
#include "allocations/allocation_sink.h"
#include "allocations/presence_filter.h"
#include "allocations/sampling.h"

extern "C" {
void* __libc_malloc(size_t size);
void __libc_free(void* block);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* block, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void* __libc_valloc(size_t size);
void* __libc_pvalloc(size_t size);
}

#define INPROF_HOOK extern "C" __attribute__((visibility("default")))

namespace {

using inprof::internal::AllocationRng;
using inprof::internal::PresenceFilter;
using inprof::internal::SampledAddressSet;

std::atomic<bool> g_enabled{false};
std::atomic<uint64_t> g_in_flight{0};  // threads between the guard and the end of a recording
InprofAllocationSink g_sink{};         // written only while disabled with nobody in flight
uint64_t g_rate = 0;
SampledAddressSet g_set;
constinit PresenceFilter g_filter;         // asked before the set: most frees end at it
std::atomic<uint64_t>* g_slots = nullptr;  // mapped once, never unmapped (a free may read it)
size_t g_slot_count = 0;
std::atomic<uint64_t> g_sampled{0}, g_untracked{0}, g_frees{0};

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
__attribute__((tls_model("initial-exec"))) constinit thread_local ThreadState t_state{};

inline bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

uint64_t thread_id(ThreadState& t) {
  if (t.tid == 0) t.tid = static_cast<uint64_t>(syscall(SYS_gettid));
  return t.tid;
}

void record(ThreadState& t, void* block, size_t size, uint8_t kind, void* caller) {
  g_in_flight.fetch_add(1, std::memory_order_seq_cst);
  if (g_enabled.load(std::memory_order_seq_cst)) {
    const InprofAllocationEvent event{reinterpret_cast<uint64_t>(block),
                                      size,
                                      inprof::internal::sample_weight(size, g_rate),
                                      reinterpret_cast<uint64_t>(caller),
                                      thread_id(t),
                                      kind};
    if (g_sink.record_allocation(g_sink.context, &event)) {
      g_sampled.fetch_add(1, std::memory_order_relaxed);
      g_filter.add(event.address);
      if (!g_set.insert(event.address)) {
        g_filter.remove(event.address);
        g_untracked.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  g_in_flight.fetch_sub(1, std::memory_order_seq_cst);
}

// The countdown reached zero: draws the next one and records this allocation if it is sampled.
__attribute__((noinline)) void* sampled_allocation(void* block, size_t size, uint8_t kind,
                                                   void* caller) {
  ThreadState& t = t_state;
  if (t.busy) return block;  // a signal handler's allocation inside the recording path
  t.busy = true;
  const int saved_errno = errno;
  const uint64_t rate = g_rate;
  bool sampled = true;
  if (rate <= 1) {
    t.countdown = 0;  // every allocation comes here
  } else {
    if (!t.seeded) {
      uint64_t seed = thread_id(t) * 0x9E3779B97F4A7C15ull;
      seed ^= reinterpret_cast<uint64_t>(&t);
      timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      seed ^= static_cast<uint64_t>(now.tv_nsec) << 20 ^ static_cast<uint64_t>(now.tv_sec);
      t.rng.seed(seed);
      t.seeded = true;
      // This allocation counts against the first countdown like any other.
      t.countdown = inprof::internal::draw_countdown(t.rng, rate) - static_cast<int64_t>(size);
      sampled = t.countdown <= 0;
    }
    if (sampled) t.countdown = inprof::internal::draw_countdown(t.rng, rate);
  }
  if (sampled && size > 0 && !t.excluded) record(t, block, size, kind, caller);
  errno = saved_errno;
  t.busy = false;
  return block;
}

inline void* allocated(void* block, size_t size, uint8_t kind, void* caller) {
  ThreadState& t = t_state;
  if ((t.countdown -= static_cast<int64_t>(size)) > 0 || block == nullptr) return block;
  return sampled_allocation(block, size, kind, caller);
}

// The countdown before the allocation: while it stays positive (nearly always) the caller
// tail-calls glibc, with no frame of its own (malloc and calloc, the hottest entry points).
inline bool countdown_ends(size_t size) {
  return (t_state.countdown -= static_cast<int64_t>(size)) <= 0;
}
inline void* ended_countdown(void* block, size_t size, uint8_t kind, void* caller) {
  return block == nullptr ? nullptr : sampled_allocation(block, size, kind, caller);
}

// The lookup first, with no shared write: nearly every free misses. (The set's memory is never
// unmapped, so a lookup racing with a session's end or start reads valid memory; such a racing
// free may at worst leave a filter counter one low, as it may the set's count.)
__attribute__((noinline)) void released(void* block) {
  if (!g_set.remove(reinterpret_cast<uint64_t>(block))) return;
  g_filter.remove(reinterpret_cast<uint64_t>(block));
  g_in_flight.fetch_add(1, std::memory_order_seq_cst);
  if (g_enabled.load(std::memory_order_seq_cst)) {
    const int saved_errno = errno;
    g_frees.fetch_add(1, std::memory_order_relaxed);
    g_sink.record_free(g_sink.context, reinterpret_cast<uint64_t>(block), thread_id(t_state));
    errno = saved_errno;
  }
  g_in_flight.fetch_sub(1, std::memory_order_seq_cst);
}

// Before the block goes back to glibc: afterwards another thread may be given the same address.
inline void releasing(void* block) {
  if (enabled() && block != nullptr && g_filter.may_contain(reinterpret_cast<uint64_t>(block))) {
    released(block);
  }
}

bool valid_posix_alignment(size_t alignment) {
  return alignment != 0 && alignment % sizeof(void*) == 0 &&
         ((alignment / sizeof(void*)) & (alignment / sizeof(void*) - 1)) == 0;
}

void* aligned(size_t alignment, size_t size, void* caller) {
  void* block = __libc_memalign(alignment, size);
  if (!enabled()) return block;
  return allocated(block, size, kInprofAllocAligned, caller);
}

void* reallocate(void* block, size_t size, void* caller) {
  if (!enabled()) return __libc_realloc(block, size);
  if (block == nullptr) return allocated(__libc_malloc(size), size, kInprofAllocRealloc, caller);
  releasing(block);
  void* moved = __libc_realloc(block, size);
  if (size == 0) return moved;  // glibc freed it
  return allocated(moved, size, kInprofAllocRealloc, caller);
}

// C++ new: glibc's allocator directly (never our malloc: it would count twice), with the
// standard loop over the new-handler.
template <bool kNothrow>
inline void* new_block(size_t size, size_t alignment, uint8_t kind, void* caller) {
  for (;;) {
    void* block = alignment ? __libc_memalign(alignment, size) : __libc_malloc(size);
    if (block != nullptr) return enabled() ? allocated(block, size, kind, caller) : block;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) {
      if constexpr (kNothrow) {
        return nullptr;
      } else {
        throw std::bad_alloc();
      }
    }
    if constexpr (kNothrow) {
      try {
        handler();
      } catch (...) {
        return nullptr;
      }
    } else {
      handler();
    }
  }
}

inline void delete_block(void* block) {
  releasing(block);
  __libc_free(block);
}

void forget_after_fork() {
  // The child has one thread and no session; the parent's threads that were inside the sink
  // are gone.
  g_enabled.store(false, std::memory_order_relaxed);
  g_in_flight.store(0, std::memory_order_relaxed);
  t_state.tid = 0;
  t_state.busy = false;
}

__attribute__((constructor)) void install_fork_handler() {
  pthread_atfork(nullptr, nullptr, forget_after_fork);
}

}  // namespace

#define CALLER __builtin_return_address(0)

INPROF_HOOK void* malloc(size_t size) {
  if (!enabled() || !countdown_ends(size)) return __libc_malloc(size);
  return ended_countdown(__libc_malloc(size), size, kInprofAllocMalloc, CALLER);
}

INPROF_HOOK void free(void* block) {
  releasing(block);
  __libc_free(block);
}

INPROF_HOOK void* calloc(size_t count, size_t size) {
  if (!enabled()) return __libc_calloc(count, size);
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes) || !countdown_ends(bytes)) {
    return __libc_calloc(count, size);
  }
  return ended_countdown(__libc_calloc(count, size), bytes, kInprofAllocCalloc, CALLER);
}

INPROF_HOOK void* realloc(void* block, size_t size) { return reallocate(block, size, CALLER); }

INPROF_HOOK void* reallocarray(void* block, size_t count, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return reallocate(block, bytes, CALLER);
}

INPROF_HOOK int posix_memalign(void** out, size_t alignment, size_t size) {
  if (!valid_posix_alignment(alignment)) return EINVAL;
  void* block = aligned(alignment, size, CALLER);
  if (block == nullptr) return ENOMEM;
  *out = block;
  return 0;
}

// glibc 2.36 makes aligned_alloc an alias of memalign (any alignment is rounded up).
INPROF_HOOK void* aligned_alloc(size_t alignment, size_t size) {
  return aligned(alignment, size, CALLER);
}
INPROF_HOOK void* memalign(size_t alignment, size_t size) {
  return aligned(alignment, size, CALLER);
}

INPROF_HOOK void* valloc(size_t size) {
  if (!enabled()) return __libc_valloc(size);
  return allocated(__libc_valloc(size), size, kInprofAllocAligned, CALLER);
}

INPROF_HOOK void* pvalloc(size_t size) {
  if (!enabled()) return __libc_pvalloc(size);
  return allocated(__libc_pvalloc(size), size, kInprofAllocAligned, CALLER);
}

#define INPROF_NEW __attribute__((visibility("default")))
INPROF_NEW void* operator new(size_t size) {
  return new_block<false>(size, 0, kInprofAllocNew, CALLER);
}
INPROF_NEW void* operator new[](size_t size) {
  return new_block<false>(size, 0, kInprofAllocNewArray, CALLER);
}
INPROF_NEW void* operator new(size_t size, const std::nothrow_t&) noexcept {
  return new_block<true>(size, 0, kInprofAllocNew, CALLER);
}
INPROF_NEW void* operator new[](size_t size, const std::nothrow_t&) noexcept {
  return new_block<true>(size, 0, kInprofAllocNewArray, CALLER);
}
INPROF_NEW void* operator new(size_t size, std::align_val_t alignment) {
  return new_block<false>(size, static_cast<size_t>(alignment), kInprofAllocNew, CALLER);
}
INPROF_NEW void* operator new[](size_t size, std::align_val_t alignment) {
  return new_block<false>(size, static_cast<size_t>(alignment), kInprofAllocNewArray, CALLER);
}
INPROF_NEW void* operator new(size_t size, std::align_val_t alignment,
                              const std::nothrow_t&) noexcept {
  return new_block<true>(size, static_cast<size_t>(alignment), kInprofAllocNew, CALLER);
}
INPROF_NEW void* operator new[](size_t size, std::align_val_t alignment,
                                const std::nothrow_t&) noexcept {
  return new_block<true>(size, static_cast<size_t>(alignment), kInprofAllocNewArray, CALLER);
}

INPROF_NEW void operator delete(void* block) noexcept { delete_block(block); }
INPROF_NEW void operator delete[](void* block) noexcept { delete_block(block); }
INPROF_NEW void operator delete(void* block, size_t) noexcept { delete_block(block); }
INPROF_NEW void operator delete[](void* block, size_t) noexcept { delete_block(block); }
INPROF_NEW void operator delete(void* block, const std::nothrow_t&) noexcept {
  delete_block(block);
}
INPROF_NEW void operator delete[](void* block, const std::nothrow_t&) noexcept {
  delete_block(block);
}
INPROF_NEW void operator delete(void* block, std::align_val_t) noexcept { delete_block(block); }
INPROF_NEW void operator delete[](void* block, std::align_val_t) noexcept { delete_block(block); }
INPROF_NEW void operator delete(void* block, size_t, std::align_val_t) noexcept {
  delete_block(block);
}
INPROF_NEW void operator delete[](void* block, size_t, std::align_val_t) noexcept {
  delete_block(block);
}
INPROF_NEW void operator delete(void* block, std::align_val_t, const std::nothrow_t&) noexcept {
  delete_block(block);
}
INPROF_NEW void operator delete[](void* block, std::align_val_t, const std::nothrow_t&) noexcept {
  delete_block(block);
}

INPROF_HOOK int inprof_allocations_attach_v1(const InprofAllocationSink* sink) {
  g_enabled.store(false, std::memory_order_seq_cst);
  while (g_in_flight.load(std::memory_order_seq_cst) != 0) sched_yield();
  if (sink == nullptr) return INPROF_ALLOCATIONS_ABI;
  if (sink->abi != INPROF_ALLOCATIONS_ABI || sink->record_allocation == nullptr ||
      sink->record_free == nullptr || sink->tracked_slots < 2 ||
      (sink->tracked_slots & (sink->tracked_slots - 1)) != 0) {
    return 0;
  }
  if (g_slot_count < sink->tracked_slots) {
    // The old array stays mapped: a free that read the set's pointer just before may still
    // probe it.
    void* memory = mmap(nullptr, sink->tracked_slots * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return 0;
    g_slots = static_cast<std::atomic<uint64_t>*>(memory);
    g_slot_count = sink->tracked_slots;
  }
  // Emptied by dropping the pages (they read as zero again, kEmpty): a session recording every
  // allocation has 32 MiB of slots, which a loop of stores would write at every start.
  if (madvise(g_slots, g_slot_count * sizeof(uint64_t), MADV_DONTNEED) == 0) {
    g_set.reset(g_slots, sink->tracked_slots, /*already_zero=*/true);
  } else {
    g_set.reset(g_slots, sink->tracked_slots);
  }
  g_filter.clear();
  g_sink = *sink;
  g_rate = sink->sample_bytes;
  g_sampled.store(0, std::memory_order_relaxed);
  g_untracked.store(0, std::memory_order_relaxed);
  g_frees.store(0, std::memory_order_relaxed);
  g_enabled.store(true, std::memory_order_seq_cst);
  return INPROF_ALLOCATIONS_ABI;
}

INPROF_HOOK void inprof_allocations_exclude_this_thread_v1(void) { t_state.excluded = true; }

INPROF_HOOK void inprof_allocations_counts_v1(InprofAllocationCounts* out) {
  out->sampled = g_sampled.load(std::memory_order_relaxed);
  out->untracked = g_untracked.load(std::memory_order_relaxed);
  out->frees = g_frees.load(std::memory_order_relaxed);
}
