// libinprof_allocations: the allocation interposer (docs/design/allocations.md, section 2). It
// replaces the malloc family and C++ new/delete, forwards every call to the allocator the program
// would have without it: glibc's own (the __libc_* functions, bound at load time), or one the
// program brings in a library of its own (jemalloc, tcmalloc: next_allocator_linux.h, every call
// through it and no tags, below), and, while a session records
// allocations, samples them by bytes (lib/allocations/sampling.h) and hands the sampled ones to
// the core's sink (lib/allocations/allocation_sink.h). Loaded only when the user asks for
// allocation profiling (LD_PRELOAD by `inprof record --allocations`, or linked through
// inprof::allocations): libinprof itself never replaces a libc function.
//
// Off (no session records): one relaxed load, then glibc's function. On: a thread-local byte
// countdown and a branch; the rare sampled allocation goes out of line. A free must know whether
// its block was sampled without a lookup that misses the cache on every free, so:
//  - a small sampled block (under 4 KiB) is made 16 bytes larger and carries a tag just before
//    the pointer handed out (lib/allocations/block_tag.h), where any other block has glibc's
//    chunk size, which free reads first anyway;
//  - a large one keeps its size (16 more bytes could take it across malloc's mmap threshold, and
//    change the program's memory behaviour) and goes in the sampled-address set, which a free
//    asks only when that chunk size says the block is large.
// The recording path never allocates and is never re-entered on a thread (`busy`); the
// profiler's own threads are excluded; a fork child starts with recording off (its inherited
// sampled blocks are still freed right).
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#include "allocation_interposer_linux.h"
#include "allocations/allocation_sink.h"

#define INPROF_HOOK extern "C" __attribute__((visibility("default")))

namespace inprof::internal::interposer {

std::atomic<bool> g_enabled{false};
std::atomic<bool> g_sampled_blocks{false};
SampledAddressSet g_set;
__attribute__((tls_model("initial-exec"))) constinit thread_local ThreadState t_state{};

namespace {

std::atomic<uint64_t> g_in_flight{0};  // threads between the guard and the end of a recording
// Written only while disabled with nobody in flight.
InprofAllocationSink g_sink{};
uint64_t g_rate = 0;
uint16_t g_generation = 0;                 // the recording session's, in its blocks' tags (never 0)
std::atomic<uint64_t>* g_slots = nullptr;  // mapped once, never unmapped (a free may read it)
size_t g_slot_count = 0;
std::atomic<uint64_t> g_sampled{0}, g_untracked{0}, g_frees{0};

uint64_t thread_id(ThreadState& t) {
  if (t.tid == 0) t.tid = static_cast<uint64_t>(syscall(SYS_gettid));
  return t.tid;
}

// The thread's signals held while glibc makes a tagged block: 16 bytes larger than asked, it
// comes from another of glibc's size classes, one the program seldom uses, whose per-thread cache
// is then often empty where the program's own would not be, and glibc takes its arena lock
// (memalign always does). A program whose signal handler allocates (not async-signal-safe, but
// programs do) deadlocks on that lock if its signal lands there. Held, the signal is delivered a
// moment later. (A tagged block's free goes to the seldom-used class's cache, seldom full: no
// more risk than the program's own free.) Two syscalls per sampled block. Not the signals of a
// fault: one blocked when the fault raises it kills the process without the program's handler
// (a crash reporter's, for a heap glibc finds damaged).
class SignalsHeld {
 public:
  SignalsHeld() {
    sigset_t held;
    sigfillset(&held);
    for (int fault : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS, SIGABRT}) {
      sigdelset(&held, fault);
    }
    pthread_sigmask(SIG_SETMASK, &held, &saved_);
  }
  ~SignalsHeld() { pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;

 private:
  sigset_t saved_;
};

void* held_malloc(size_t size) {
  SignalsHeld held;
  return __libc_malloc(size);
}

}  // namespace

// Records a sampled allocation; returns the generation its tag carries (0: not recorded).
uint16_t record(ThreadState& t, void* block, size_t size, uint8_t kind, void* caller) {
  uint16_t generation = 0;
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
      generation = g_generation;
    }
  }
  g_in_flight.fetch_sub(1, std::memory_order_seq_cst);
  return generation;
}

// The countdown ran out: whether this allocation is sampled, with the next countdown drawn.
bool countdown_sampled(ThreadState& t, size_t size) {
  const uint64_t rate = g_rate;
  if (rate <= 1) {
    t.countdown = 0;  // every allocation comes here
    return true;
  }
  bool sampled = true;
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
  return sampled;
}

void mark_sampled_blocks() {
  if (!g_sampled_blocks.load(std::memory_order_relaxed)) {
    g_sampled_blocks.store(true, std::memory_order_relaxed);
  }
}

// A large sampled block, at its own size: recorded, then put in the set.
void record_large(ThreadState& t, void* block, size_t size, uint8_t kind, void* caller) {
  mark_sampled_blocks();
  if (record(t, block, size, kind, caller) != 0 &&
      !g_set.insert(reinterpret_cast<uint64_t>(block))) {
    g_untracked.fetch_add(1, std::memory_order_relaxed);
  }
}

// A small sampled block: `offset` bytes into glibc's `block`, tagged (generation 0 if the record
// failed: its free is then not recorded, but the block is still freed right).
void* tag_small(ThreadState& t, void* block, size_t offset, size_t size, uint8_t kind,
                void* caller) {
  mark_sampled_blocks();
  void* user = static_cast<char*>(block) + offset;
  const uint16_t generation = record(t, user, size, kind, caller);
  BlockTag::write_before(user, BlockTag::encode(static_cast<uint32_t>(offset), generation));
  return user;
}

// The countdown ran out on an allocation of `size` bytes not made yet: makes it, and, if it is
// sampled, records it (a small block made `offset` bytes larger and tagged, a large one at its
// own size and put in the set).
__attribute__((noinline)) void* sampled_allocation(Shape shape, size_t size, size_t alignment,
                                                   uint8_t kind, void* caller) {
  ThreadState& t = t_state;
  if (t.busy) return plain(shape, size, alignment);  // a signal handler's, inside the recording
  t.busy = true;
  const int saved_errno = errno;
  const bool paged = shape == Shape::kValloc || shape == Shape::kPvalloc;
  const size_t offset = BlockTag::offset_for(paged ? page_size() : alignment);
  size_t bytes = size;
  if (shape == Shape::kPvalloc) bytes = (size + page_size() - 1) & ~(page_size() - 1);
  void* user;
  if (!countdown_sampled(t, size) || size == 0 || t.excluded) {
    user = plain(shape, size, alignment);
  } else if (foreign_route() || bytes > kLargestTagged || offset == 0 || bytes < size) {
    user = plain(shape, size, alignment);
    if (user != nullptr) record_large(t, user, size, kind, caller);
  } else {
    void* block;
    {
      SignalsHeld held;
      block = offset > BlockTag::kMinOffset ? __libc_memalign(offset, bytes + offset)
              : shape == Shape::kCalloc     ? __libc_calloc(1, bytes + offset)
                                            : __libc_malloc(bytes + offset);
    }
    user = block == nullptr ? nullptr : tag_small(t, block, offset, size, kind, caller);
  }
  if (user != nullptr) errno = saved_errno;  // else glibc's ENOMEM stays
  t.busy = false;
  return user;
}

// A sampled block is going back (freed, or moved by realloc): its free is recorded if its session
// is the one recording. Before the block returns to glibc: afterwards another thread may be given
// the same address. `generation`: a tag's (0: never recorded), or kSetMember for a block just
// taken out of the set (which holds the recording session's blocks only).
constexpr uint32_t kSetMember = 0x10000;
void record_free(void* user, uint32_t generation) {
  if (generation == 0) return;
  g_in_flight.fetch_add(1, std::memory_order_seq_cst);
  if (g_enabled.load(std::memory_order_seq_cst) &&
      (generation == kSetMember || generation == g_generation)) {
    const int saved_errno = errno;
    g_frees.fetch_add(1, std::memory_order_relaxed);
    g_sink.record_free(g_sink.context, reinterpret_cast<uint64_t>(user), thread_id(t_state));
    errno = saved_errno;
  }
  g_in_flight.fetch_sub(1, std::memory_order_seq_cst);
}

__attribute__((noinline)) void free_tagged(void* user, BlockTag tag) {
  record_free(user, tag.generation);
  // Cleared, so that a double free meets glibc's own checks rather than this tag.
  BlockTag::write_before(user, 0);
  __libc_free(static_cast<char*>(user) - tag.offset);
}

bool valid_posix_alignment(size_t alignment) {
  return alignment != 0 && alignment % sizeof(void*) == 0 &&
         ((alignment / sizeof(void*)) & (alignment / sizeof(void*) - 1)) == 0;
}

void* aligned(size_t alignment, size_t size, void* caller) {
  if (!glibc_route()) [[unlikely]] {
    return routed_allocation(Shape::kAligned, size, alignment, kInprofAllocAligned, caller);
  }
  if (!enabled() || !countdown_ends(size)) return __libc_memalign(alignment, size);
  return sampled_allocation(Shape::kAligned, size, alignment, kInprofAllocAligned, caller);
}

// A realloc of a small tagged block moves it (at most 4 KiB to copy): a new block, sampled or not
// by the countdown, the old contents, the old block freed.
__attribute__((noinline)) void* reallocate_tagged(void* user, BlockTag tag, size_t size,
                                                  void* caller) {
  if (size == 0) {  // glibc's realloc frees and returns null
    free_tagged(user, tag);
    return nullptr;
  }
  const size_t old_size = glibc_usable_size(static_cast<char*>(user) - tag.offset) - tag.offset;
  void* fresh = enabled() && countdown_ends(size)
                    ? sampled_allocation(Shape::kMalloc, size, 0, kInprofAllocRealloc, caller)
                    : __libc_malloc(size);
  if (fresh == nullptr) return nullptr;  // the old block stays, as realloc leaves it
  std::memcpy(fresh, user, old_size < size ? old_size : size);
  free_tagged(user, tag);
  return fresh;
}

// A sampled realloc of an ordinary block: in place by glibc when the new size is large (then put
// in the set), else moved into a small tagged block (at most 4 KiB to copy).
__attribute__((noinline)) void* sampled_reallocation(void* block, size_t size, void* caller) {
  ThreadState& t = t_state;
  if (t.busy) return plain_realloc(block, size);
  t.busy = true;
  const int saved_errno = errno;
  void* result;
  if (!countdown_sampled(t, size) || t.excluded) {
    result = plain_realloc(block, size);
  } else if (foreign_route() || size > kLargestTagged) {
    result = plain_realloc(block, size);
    if (result != nullptr) record_large(t, result, size, kInprofAllocRealloc, caller);
  } else {
    void* fresh = held_malloc(size + BlockTag::kMinOffset);
    result = nullptr;
    if (fresh != nullptr) {
      const size_t old_size = glibc_usable_size(block);
      std::memcpy(static_cast<char*>(fresh) + BlockTag::kMinOffset, block,
                  old_size < size ? old_size : size);
      result = tag_small(t, fresh, BlockTag::kMinOffset, size, kInprofAllocRealloc, caller);
      __libc_free(block);
    }
  }
  if (result != nullptr) errno = saved_errno;
  t.busy = false;
  return result;
}

// A block in the set goes back (freed, or moved by realloc): recorded, before glibc may give
// its address to another thread.
__attribute__((noinline)) void release_large(void* block) {
  if (g_set.remove(reinterpret_cast<uint64_t>(block))) record_free(block, kSetMember);
}

void* reallocate(void* block, size_t size, void* caller) {
  if (!glibc_route()) [[unlikely]]
    return routed_reallocate(block, size, caller);
  if (block != nullptr && g_sampled_blocks.load(std::memory_order_relaxed)) {
    const uint64_t word = word_before(block);
    BlockTag tag;
    if (tagged(word, tag)) return reallocate_tagged(block, tag, size, caller);
    if (maybe_in_set(word)) release_large(block);  // its new block is sampled anew, or not
  }
  if (!enabled()) return __libc_realloc(block, size);
  if (block == nullptr) {
    if (!countdown_ends(size)) return __libc_malloc(size);
    return sampled_allocation(Shape::kMalloc, size, 0, kInprofAllocRealloc, caller);
  }
  if (size == 0 || !countdown_ends(size)) return __libc_realloc(block, size);
  return sampled_reallocation(block, size, caller);
}

// C++ new: glibc's allocator directly (never our malloc: it would count twice), with the
// standard loop over the new-handler.
template <bool kNothrow>
inline void* new_block(size_t size, size_t alignment, uint8_t kind, void* caller) {
  for (;;) {
    void* block;
    if (!glibc_route()) [[unlikely]] {
      block = routed_allocation(alignment ? Shape::kAligned : Shape::kMalloc, size, alignment, kind,
                                caller);
    } else if (enabled() && countdown_ends(size)) {
      block = sampled_allocation(alignment ? Shape::kAligned : Shape::kMalloc, size, alignment,
                                 kind, caller);
    } else {
      block = alignment ? __libc_memalign(alignment, size) : __libc_malloc(size);
    }
    if (block != nullptr) return block;
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

void forget_after_fork() {
  // The child has one thread and no session; the parent's threads that were inside the sink
  // are gone. Its sampled blocks stay tagged or in the set (g_sampled_blocks is kept).
  g_enabled.store(false, std::memory_order_relaxed);
  g_in_flight.store(0, std::memory_order_relaxed);
  t_state.tid = 0;
  t_state.busy = false;
}

__attribute__((constructor)) void at_load() {
  settle_route();  // at the latest now, before the program's threads
  pthread_atfork(nullptr, nullptr, forget_after_fork);
  glibc_usable_size(nullptr);  // looked up now rather than inside a realloc
}

}  // namespace inprof::internal::interposer

using namespace inprof::internal::interposer;
using inprof::internal::BlockTag;

#define CALLER __builtin_return_address(0)

INPROF_HOOK void* malloc(size_t size) {
  if (!glibc_route()) [[unlikely]] {
    return routed_allocation(Shape::kMalloc, size, 0, kInprofAllocMalloc, CALLER);
  }
  if (!enabled() || !countdown_ends(size)) return __libc_malloc(size);
  return sampled_allocation(Shape::kMalloc, size, 0, kInprofAllocMalloc, CALLER);
}

INPROF_HOOK void free(void* block) { release(block); }

INPROF_HOOK void* calloc(size_t count, size_t size) {
  size_t bytes;
  if (!glibc_route()) [[unlikely]] {
    if (__builtin_mul_overflow(count, size, &bytes)) {
      errno = ENOMEM;
      return nullptr;
    }
    return routed_allocation(Shape::kCalloc, bytes, 0, kInprofAllocCalloc, CALLER);
  }
  if (!enabled()) return __libc_calloc(count, size);
  if (__builtin_mul_overflow(count, size, &bytes) || !countdown_ends(bytes)) {
    return __libc_calloc(count, size);
  }
  return sampled_allocation(Shape::kCalloc, bytes, 0, kInprofAllocCalloc, CALLER);
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
  if (!glibc_route()) [[unlikely]] {
    return routed_allocation(Shape::kValloc, size, 0, kInprofAllocAligned, CALLER);
  }
  if (!enabled() || !countdown_ends(size)) return __libc_valloc(size);
  return sampled_allocation(Shape::kValloc, size, 0, kInprofAllocAligned, CALLER);
}

INPROF_HOOK void* pvalloc(size_t size) {
  if (!glibc_route()) [[unlikely]] {
    return routed_allocation(Shape::kPvalloc, size, 0, kInprofAllocAligned, CALLER);
  }
  if (!enabled() || !countdown_ends(size)) return __libc_pvalloc(size);
  return sampled_allocation(Shape::kPvalloc, size, 0, kInprofAllocAligned, CALLER);
}

// A tagged block's usable size is what follows its tag.
INPROF_HOOK size_t malloc_usable_size(void* block) {
  if (!glibc_route()) [[unlikely]]
    return routed_usable_size(block);
  BlockTag tag;
  if (block != nullptr && g_sampled_blocks.load(std::memory_order_relaxed) &&
      tagged(word_before(block), tag)) {
    return glibc_usable_size(static_cast<char*>(block) - tag.offset) - tag.offset;
  }
  return glibc_usable_size(block);
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

INPROF_NEW void operator delete(void* block) noexcept { release(block); }
INPROF_NEW void operator delete[](void* block) noexcept { release(block); }
INPROF_NEW void operator delete(void* block, size_t) noexcept { release(block); }
INPROF_NEW void operator delete[](void* block, size_t) noexcept { release(block); }
INPROF_NEW void operator delete(void* block, const std::nothrow_t&) noexcept { release(block); }
INPROF_NEW void operator delete[](void* block, const std::nothrow_t&) noexcept { release(block); }
INPROF_NEW void operator delete(void* block, std::align_val_t) noexcept { release(block); }
INPROF_NEW void operator delete[](void* block, std::align_val_t) noexcept { release(block); }
INPROF_NEW void operator delete(void* block, size_t, std::align_val_t) noexcept { release(block); }
INPROF_NEW void operator delete[](void* block, size_t, std::align_val_t) noexcept {
  release(block);
}
INPROF_NEW void operator delete(void* block, std::align_val_t, const std::nothrow_t&) noexcept {
  release(block);
}
INPROF_NEW void operator delete[](void* block, std::align_val_t, const std::nothrow_t&) noexcept {
  release(block);
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
  // allocation has 32 MiB of slots, which a loop of stores would write at every start. Blocks of
  // an earlier session are forgotten, as their tags are by the new generation.
  if (madvise(g_slots, g_slot_count * sizeof(uint64_t), MADV_DONTNEED) == 0) {
    g_set.reset(g_slots, sink->tracked_slots, /*already_zero=*/true);
  } else {
    g_set.reset(g_slots, sink->tracked_slots);
  }
  g_sink = *sink;
  g_rate = sink->sample_bytes;
  if (++g_generation == 0) g_generation = 1;
  g_sampled.store(0, std::memory_order_relaxed);
  g_untracked.store(0, std::memory_order_relaxed);
  g_frees.store(0, std::memory_order_relaxed);
  g_sampled_blocks.store(true, std::memory_order_seq_cst);
  g_enabled.store(true, std::memory_order_seq_cst);
  return INPROF_ALLOCATIONS_ABI;
}

INPROF_HOOK void inprof_allocations_exclude_this_thread_v1(void) { t_state.excluded = true; }

INPROF_HOOK void inprof_allocations_counts_v1(InprofAllocationCounts* out) {
  out->sampled = g_sampled.load(std::memory_order_relaxed);
  out->untracked = g_untracked.load(std::memory_order_relaxed);
  out->frees = g_frees.load(std::memory_order_relaxed);
}
