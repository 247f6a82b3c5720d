// The allocation sink (allocation_recorder.h).
#include "allocations/allocation_recorder.h"

#include <algorithm>
#include <new>
#include <thread>

#include "session/process_info.h"
#include "unwind/arch.h"

namespace inprof::internal {

namespace {

// A producer that finds every slot taken waits this long for the sampler, then drops the sample
// (bounded: the sampler may itself wait for a lock this thread holds, the loader's in dlopen).
// Recording every allocation waits longer, so that its totals stay exact on a loaded machine.
constexpr uint64_t kFullWaitNs = 5000000;
constexpr uint64_t kFullWaitEveryAllocationNs = 200000000;

}  // namespace

AllocationRecorder& AllocationRecorder::instance() {
  static auto* recorder = new AllocationRecorder;  // leaked: the interposer may still call in
  return *recorder;
}

bool AllocationRecorder::find_hooks() {
  if (!hooks_found_) hooks_found_ = find_allocation_hooks(&hooks_);
  return hooks_found_;
}

bool AllocationRecorder::attach(RingBuffer* ring, AllocationPool* pool, uint64_t start_ns,
                                uint64_t sample_bytes, uint64_t tracked_slots) {
  if (!find_hooks()) return false;
  start_ns_ = start_ns;
  sample_bytes_ = sample_bytes;
  free_drops_.store(0, std::memory_order_relaxed);
  ring_.store(ring, std::memory_order_release);
  pool_.store(pool, std::memory_order_release);
  InprofAllocationSink sink{};
  sink.abi = INPROF_ALLOCATIONS_ABI;
  sink.sample_bytes = sample_bytes;
  sink.tracked_slots = tracked_slots;
  sink.context = this;
  sink.record_allocation = &AllocationRecorder::record_allocation;
  sink.record_free = &AllocationRecorder::record_free;
  if (hooks_.attach(&sink) != INPROF_ALLOCATIONS_ABI) {
    pool_.store(nullptr, std::memory_order_release);
    ring_.store(nullptr, std::memory_order_release);
    return false;
  }
  return true;
}

void AllocationRecorder::detach() {
  if (!hooks_found_ || pool_.load(std::memory_order_relaxed) == nullptr) return;
  hooks_.attach(nullptr);  // returns once no thread is inside the sink
  pool_.store(nullptr, std::memory_order_release);
  ring_.store(nullptr, std::memory_order_release);
}

void AllocationRecorder::exclude_this_thread() {
  if (hooks_found_) hooks_.exclude_this_thread();
}

AllocationStatsRecord AllocationRecorder::stats() const {
  AllocationStatsRecord stats;
  stats.sample_bytes = sample_bytes_;
  if (!hooks_found_) return stats;
  InprofAllocationCounts counts{};
  hooks_.counts(&counts);
  stats.sampled = counts.sampled;
  stats.untracked = counts.untracked;
  stats.frees = counts.frees;
  stats.dropped = free_drops_.load(std::memory_order_relaxed);  // the session adds the pool's
  return stats;
}

// Inside the program's allocator, on the allocating thread.
int AllocationRecorder::record_allocation(void* context, const InprofAllocationEvent* event) {
  auto* self = static_cast<AllocationRecorder*>(context);
  AllocationPool* pool = self->pool_.load(std::memory_order_acquire);
  if (pool == nullptr) return 0;
  AllocationSlot* slot = pool->acquire(event->tid);
  if (slot == nullptr) {
    // Every slot is taken (a high rate): give the sampler a moment rather than lose the sample.
    const uint64_t give_up_at =
        monotonic_ns() + (self->sample_bytes_ == 1 ? kFullWaitEveryAllocationNs : kFullWaitNs);
    do {
      std::this_thread::yield();
      slot = pool->acquire(event->tid);
    } while (slot == nullptr && monotonic_ns() < give_up_at);
    if (slot == nullptr) {
      pool->dropped().fetch_add(1, std::memory_order_relaxed);
      return 0;
    }
  }
  StackSnapshot& snapshot = slot->snapshot;
  capture_own_registers(snapshot.regs);
  snapshot.time_ns = monotonic_ns();
  snapshot.thread_cpu_ns = 0;
  snapshot.expirations_merged = 0;
  snapshot.stack_start = snapshot.sp();
  // The copy stops at the first unmapped page: the top of the stack, however little is left.
  snapshot.stack_size = read_memory(snapshot.sp(), snapshot.buffer, snapshot.capacity);
  snapshot.stack_found = snapshot.stack_size > 0;
  snapshot.stack_truncated = snapshot.stack_size == snapshot.capacity;
  snapshot.stack_region_known = true;
  snapshot.registers_partial = false;
  snapshot.runnable = true;
  snapshot.label_source = nullptr;
  snapshot.label_count = 0;
  slot->event = *event;
  pool->publish(slot);
  return 1;
}

void AllocationRecorder::record_free(void* context, uint64_t address, uint64_t tid) {
  auto* self = static_cast<AllocationRecorder*>(context);
  RingBuffer* ring = self->ring_.load(std::memory_order_acquire);
  if (ring == nullptr) return;
  const uint64_t now = monotonic_ns();
  uint8_t buffer[64];
  ByteWriter w(std::span<uint8_t>(buffer, sizeof buffer));
  encode(w, FreeRecord{tid, now > self->start_ns_ ? now - self->start_ns_ : 0, address});
  if (w.overflowed() || !ring->write(static_cast<uint8_t>(RecordType::kFree), w.view())) {
    self->free_drops_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace inprof::internal
