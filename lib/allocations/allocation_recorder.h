// The core's side of allocation profiling: the sink the interposer (libinprof_allocations) calls
// for each sampled allocation and each free of a recorded block. A sampled allocation copies the
// allocating thread's own registers and the top of its stack into an AllocationPool slot, which
// the sampler unwinds later; a free goes straight into the session's ring. Both run inside the
// program's malloc/free: no allocation, no lock. One per process, never destroyed (the
// interposer may hold its address).
#ifndef INPROF_LIB_ALLOCATION_RECORDER_H_
#define INPROF_LIB_ALLOCATION_RECORDER_H_

#include <atomic>
#include <cstdint>

#include "allocations/allocation_hooks.h"
#include "allocations/allocation_pool.h"
#include "dump/dump_records.h"
#include "session/ring_buffer.h"

namespace inprof::internal {

class AllocationRecorder {
 public:
  static AllocationRecorder& instance();

  // Looks for the interposer (once found, it stays). False: it is not in the process.
  bool find_hooks();
  // Starts recording into `ring` through `pool`. False if the interposer refused the sink.
  bool attach(RingBuffer* ring, AllocationPool* pool, uint64_t start_ns, uint64_t sample_bytes,
              uint64_t tracked_slots);
  // Stops recording; returns once no thread is inside the sink any more.
  void detach();
  // The calling thread's allocations are never recorded (the profiler's own threads).
  void exclude_this_thread();
  // The counts so far, for the dump's allocation stats record.
  AllocationStatsRecord stats() const;
  bool attached() const { return pool_.load(std::memory_order_relaxed) != nullptr; }

 private:
  AllocationRecorder() = default;
  static int record_allocation(void* context, const InprofAllocationEvent* event);
  static void record_free(void* context, uint64_t address, uint64_t tid);

  bool hooks_found_ = false;
  AllocationHooks hooks_;
  std::atomic<RingBuffer*> ring_{nullptr};
  std::atomic<AllocationPool*> pool_{nullptr};
  uint64_t start_ns_ = 0;
  uint64_t sample_bytes_ = 0;
  std::atomic<uint64_t> free_drops_{0};
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_ALLOCATION_RECORDER_H_
