#include "memory/own_heap.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include "memory/pages.h"

#if defined(INPROF_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/lsan_interface.h>
#endif

namespace inprof::internal {
namespace {

// Under ASan the heap says what it holds. Its mappings are roots for LeakSanitizer, which does
// not see into memory it did not allocate (a program's block referenced only from here would be
// reported leaked). A freed block is poisoned until it is handed out again (a use after free in
// the profiler's threads is reported), and made addressable before the heap itself writes it:
// clang's ASan poisons the cookie of every `new T[n]`, which a heap of its own must clear.
#if defined(INPROF_ASAN)
void mark_mapped(void* first, size_t bytes) { __lsan_register_root_region(first, bytes); }
void mark_unmapped(void* first, size_t bytes) {
  ASAN_UNPOISON_MEMORY_REGION(first, bytes);  // (the pages may be mapped again, by anyone)
  __lsan_unregister_root_region(first, bytes);
}
void mark_in_use(void* block, size_t bytes) { ASAN_UNPOISON_MEMORY_REGION(block, bytes); }
void mark_free(void* block, size_t bytes) { ASAN_POISON_MEMORY_REGION(block, bytes); }
#else
void mark_mapped(void*, size_t) {}
void mark_unmapped(void*, size_t) {}
void mark_in_use(void*, size_t) {}
void mark_free(void*, size_t) {}
#endif

// Size classes: every 16 bytes to 128, then four steps per doubling to kOwnHeapLargestSmall (a
// block wastes at most a quarter of itself).
constexpr std::array<uint32_t, 36> kClassBytes = {
    16,   32,   48,   64,   80,   96,   112,  128,  160,   192,   224,   256,
    320,  384,  448,  512,  640,  768,  896,  1024, 1280,  1536,  1792,  2048,
    2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384};
static_assert(kClassBytes.back() == kOwnHeapLargestSmall);

// The table of chunks and large mappings, by base address. Open addressing; a removed entry
// becomes a tombstone unless nothing follows it. Readers take no lock: an entry's `what` is
// written before its base is published.
constexpr size_t kSlots = 8192;                    // 512 MiB of 64 KiB units at most
constexpr size_t kMostUsedSlots = kSlots / 8 * 7;  // kept free to bound every probe
constexpr uintptr_t kEmpty = 0;
constexpr uintptr_t kTombstone = 1;
constexpr uint64_t kLargeFlag = uint64_t{1} << 63;  // `what`: mapped bytes | kLargeFlag,
                                                    // or a class index + 1 for a chunk
struct Slot {
  std::atomic<uintptr_t> base;
  std::atomic<uint64_t> what;
};

struct FreeBlock {
  FreeBlock* next;
};

struct Heap {
  std::mutex mutex;
  std::atomic<Slot*> table{nullptr};
  size_t used_slots = 0;  // live and tombstones
  std::array<FreeBlock*, kClassBytes.size()> free_lists{};
  std::array<uintptr_t, kClassBytes.size()> bump_next{};
  std::array<uintptr_t, kClassBytes.size()> bump_end{};
  std::atomic<size_t> mapped_bytes{0};
};

// Constant-initialised and never destroyed (its members' destructors are trivial): usable from
// the first static constructor to the last exit handler.
constinit Heap g_heap;
static_assert(std::is_trivially_destructible_v<Heap>);
Heap& heap() { return g_heap; }

size_t start_slot(uintptr_t base) {
  return static_cast<size_t>((static_cast<uint64_t>(base >> 16) * 0x9E3779B97F4A7C15ull) >> 51) %
         kSlots;
}

Slot* find(Slot* table, uintptr_t base) {
  if (table == nullptr) return nullptr;
  for (size_t i = start_slot(base), n = 0; n < kSlots; i = (i + 1) % kSlots, ++n) {
    const uintptr_t key = table[i].base.load(std::memory_order_acquire);
    if (key == base) return &table[i];
    if (key == kEmpty) return nullptr;
  }
  return nullptr;
}

// Under the lock.
bool insert(Heap& h, uintptr_t base, uint64_t what) {
  Slot* table = h.table.load(std::memory_order_relaxed);
  if (table == nullptr) {
    table = static_cast<Slot*>(map_aligned_pages(kSlots * sizeof(Slot), page_bytes()));
    if (table == nullptr) return false;
    h.table.store(table, std::memory_order_release);
  }
  if (h.used_slots >= kMostUsedSlots) return false;
  for (size_t i = start_slot(base);; i = (i + 1) % kSlots) {
    const uintptr_t key = table[i].base.load(std::memory_order_relaxed);
    if (key == kEmpty || key == kTombstone) {
      table[i].what.store(what, std::memory_order_relaxed);
      table[i].base.store(base, std::memory_order_release);
      if (key == kEmpty) ++h.used_slots;
      return true;
    }
  }
}

// Under the lock. An entry with an empty successor ends no probe chain but its own: it (and the
// tombstones before it) can become empty again.
void remove(Heap& h, Slot* slot) {
  Slot* table = h.table.load(std::memory_order_relaxed);
  size_t i = static_cast<size_t>(slot - table);
  if (table[(i + 1) % kSlots].base.load(std::memory_order_relaxed) != kEmpty) {
    slot->base.store(kTombstone, std::memory_order_release);
    return;
  }
  slot->base.store(kEmpty, std::memory_order_release);
  --h.used_slots;
  for (i = (i + kSlots - 1) % kSlots; table[i].base.load(std::memory_order_relaxed) == kTombstone;
       i = (i + kSlots - 1) % kSlots) {
    table[i].base.store(kEmpty, std::memory_order_release);
    --h.used_slots;
  }
}

size_t class_of(size_t bytes) {
  size_t c = 0;
  while (kClassBytes[c] < bytes) ++c;
  return c;
}

void* allocate_small(Heap& h, size_t bytes) {
  const size_t c = class_of(bytes == 0 ? 1 : bytes);
  std::lock_guard lock(h.mutex);
  if (FreeBlock* block = h.free_lists[c]) {
    mark_in_use(block, kClassBytes[c]);
    h.free_lists[c] = block->next;
    return block;
  }
  if (h.bump_end[c] - h.bump_next[c] < kClassBytes[c]) {
    void* chunk = map_aligned_pages(kOwnHeapChunkBytes, kOwnHeapChunkBytes);
    if (chunk == nullptr) return nullptr;
    if (!insert(h, reinterpret_cast<uintptr_t>(chunk), c + 1)) {
      unmap_pages(chunk, kOwnHeapChunkBytes);
      return nullptr;
    }
    h.mapped_bytes.fetch_add(kOwnHeapChunkBytes, std::memory_order_relaxed);
    mark_mapped(chunk, kOwnHeapChunkBytes);
    h.bump_next[c] = reinterpret_cast<uintptr_t>(chunk);
    h.bump_end[c] = h.bump_next[c] + kOwnHeapChunkBytes;
  }
  void* block = reinterpret_cast<void*>(h.bump_next[c]);
  h.bump_next[c] += kClassBytes[c];
  return block;
}

void* allocate_large(Heap& h, size_t bytes) {
  const size_t page = page_bytes();
  if (bytes > (SIZE_MAX >> 2)) return nullptr;
  const size_t mapped = (bytes + page - 1) / page * page;
  void* block = map_aligned_pages(mapped, kOwnHeapChunkBytes);
  if (block == nullptr) return nullptr;
  bool listed;
  {
    std::lock_guard lock(h.mutex);
    listed = insert(h, reinterpret_cast<uintptr_t>(block), mapped | kLargeFlag);
  }
  if (!listed) {
    unmap_pages(block, mapped);
    return nullptr;
  }
  h.mapped_bytes.fetch_add(mapped, std::memory_order_relaxed);
  mark_mapped(block, mapped);
  return block;
}

Slot* slot_of(Heap& h, const void* block) {
  const auto address = reinterpret_cast<uintptr_t>(block);
  Slot* slot =
      find(h.table.load(std::memory_order_acquire), address & ~(uintptr_t{kOwnHeapChunkBytes} - 1));
  if (slot == nullptr) return nullptr;
  // A large mapping may be shorter than 64 KiB: what follows it in its unit is someone else's.
  if ((slot->what.load(std::memory_order_relaxed) & kLargeFlag) &&
      slot->base.load(std::memory_order_relaxed) != address) {
    return nullptr;
  }
  return slot;
}

}  // namespace

void* own_heap_allocate(size_t bytes, size_t alignment) {
  Heap& h = heap();
  if (bytes <= kOwnHeapLargestSmall && alignment <= 16) return allocate_small(h, bytes);
  if (alignment > kOwnHeapChunkBytes) return nullptr;
  return allocate_large(h, bytes);
}

bool own_heap_owns(const void* block) { return block && slot_of(heap(), block) != nullptr; }

bool own_heap_release(void* block) {
  if (block == nullptr) return false;
  Heap& h = heap();
  Slot* slot = slot_of(h, block);
  if (slot == nullptr) return false;
  const uint64_t what = slot->what.load(std::memory_order_relaxed);
  if (what & kLargeFlag) {
    {
      std::lock_guard lock(h.mutex);
      remove(h, slot);
    }
    const size_t mapped = static_cast<size_t>(what & ~kLargeFlag);
    mark_unmapped(block, mapped);
    unmap_pages(block, mapped);
    h.mapped_bytes.fetch_sub(mapped, std::memory_order_relaxed);
    return true;
  }
  std::lock_guard lock(h.mutex);
  auto* freed = static_cast<FreeBlock*>(block);
  mark_in_use(freed, kClassBytes[what - 1]);
  freed->next = h.free_lists[what - 1];
  h.free_lists[what - 1] = freed;
  mark_free(freed, kClassBytes[what - 1]);
  return true;
}

void own_heap_hold_for_fork() { heap().mutex.lock(); }
void own_heap_release_after_fork() { heap().mutex.unlock(); }

size_t own_heap_mapped_bytes() { return heap().mapped_bytes.load(std::memory_order_relaxed); }

}  // namespace inprof::internal
