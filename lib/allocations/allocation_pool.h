// Sampled allocations on their way from the allocating thread to the sampler: a fixed set of
// slots, each a stack snapshot (the allocating thread's own registers and the top of its stack)
// plus what was allocated. Any thread fills a slot (inside malloc: no lock, no allocation); the
// sampler unwinds the ready ones and writes them out. Slot states: free -> filling (a producer
// owns it) -> ready -> free (the sampler, once written).
#ifndef INPROF_LIB_ALLOCATION_POOL_H_
#define INPROF_LIB_ALLOCATION_POOL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "allocations/allocation_sink.h"
#include "memory/large_alloc.h"
#include "unwind/stack_snapshot.h"

namespace inprof::internal {

struct AllocationSlot {
  enum : uint32_t { kFree = 0, kFilling = 1, kReady = 2 };
  std::atomic<uint32_t> state{kFree};
  InprofAllocationEvent event{};
  StackSnapshot snapshot;
};

class AllocationPool {
 public:
  AllocationPool(size_t slot_count, size_t stack_bytes)
      // Mapped, not from malloc: the pool lives as long as the session, and must not grow the
      // heap the program allocates from (tests/transparency/malloc_threshold).
      : slots_(make_mapped_array<AllocationSlot>(slot_count)),
        slot_count_(slot_count),
        stacks_(make_mapped_array<uint8_t>(slot_count * stack_bytes)) {
    for (size_t i = 0; i < slot_count; ++i) {
      slots_[i].snapshot.buffer = stacks_.get() + i * stack_bytes;
      slots_[i].snapshot.capacity = stack_bytes;
    }
  }
  AllocationPool(const AllocationPool&) = delete;
  AllocationPool& operator=(const AllocationPool&) = delete;

  // Producer (any thread): a free slot, now owned by the caller, or null when all are taken.
  AllocationSlot* acquire(uint64_t hint) {
    for (size_t k = 0; k < slot_count_; ++k) {
      AllocationSlot& slot = slots_[(hint + k) % slot_count_];
      uint32_t expected = AllocationSlot::kFree;
      if (slot.state.load(std::memory_order_relaxed) == expected &&
          slot.state.compare_exchange_strong(expected, AllocationSlot::kFilling,
                                             std::memory_order_acquire)) {
        return &slot;
      }
    }
    return nullptr;
  }

  // Called (by a producer, inside the program's allocator) when half the slots are ready: the
  // sampler collects them without waiting for its next tick. Set before any producer runs; it
  // must be async-signal-safe and leave errno as it was.
  void set_wake(void (*wake)(void*), void* context) {
    wake_ = wake;
    wake_context_ = context;
  }

  // Producer: hands a filled slot to the sampler.
  void publish(AllocationSlot* slot) {
    slot->state.store(AllocationSlot::kReady, std::memory_order_release);
    if (ready_.fetch_add(1, std::memory_order_release) + 1 == slot_count_ / 2 && wake_) {
      wake_(wake_context_);
    }
  }

  // Producer: gives back a slot it could not fill.
  void abandon(AllocationSlot* slot) {
    slot->state.store(AllocationSlot::kFree, std::memory_order_release);
  }

  // Consumer (the sampler): calls `write(slot)` for each ready slot, then frees it.
  template <class Write>
  size_t drain(Write&& write) {
    if (ready_.load(std::memory_order_acquire) == 0) return 0;
    size_t done = 0;
    for (size_t i = 0; i < slot_count_; ++i) {
      AllocationSlot& slot = slots_[i];
      if (slot.state.load(std::memory_order_acquire) != AllocationSlot::kReady) continue;
      write(slot);
      ready_.fetch_sub(1, std::memory_order_relaxed);
      slot.state.store(AllocationSlot::kFree, std::memory_order_release);
      ++done;
    }
    return done;
  }

  size_t ready() const { return ready_.load(std::memory_order_relaxed); }
  std::atomic<uint64_t>& dropped() { return dropped_; }

 private:
  LargeArray<AllocationSlot> slots_;
  const size_t slot_count_;
  LargeArray<uint8_t> stacks_;
  std::atomic<size_t> ready_{0};
  std::atomic<uint64_t> dropped_{0};
  void (*wake_)(void*) = nullptr;
  void* wake_context_ = nullptr;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_ALLOCATION_POOL_H_
