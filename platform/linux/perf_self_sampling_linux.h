// SelfSampling by the kernel (perf_event_open), where the kernel lets a process sample its own
// threads (perf_event_paranoid <= 2 for user-mode events of its own threads, and no container
// policy against the call): each busy thread gets a PerfEventRing; the kernel copies its
// registers and the top of its stack after each interval of its CPU time, exactly (a hrtimer
// while it runs, not the scheduler tick), and nothing at all reaches the thread.
//
// What it cannot do: copy the thread's labels (no code of ours runs on the thread), so threads
// with a label stack are left to the signal-based SelfSampling (see SelfSamplingRouter).
//
// Bounds (ring_limits()): a ring for up to twice as many threads as the machine has CPUs (at least
// 16, at most 256), each a mapping (no descriptor is kept), their mappings together within a
// memory budget (half the user's perf_event_mlock_kb allowance, which the kernel gives per CPU, at
// most 96 KiB a ring and at least 1 MiB): beyond that, start() refuses and the thread gets a timer
// instead. Each ring takes the stack size
// its thread's walks need (note_walk(): larger at once when a walk runs out of copied stack,
// smaller when the most any walk used over many samples is much less): the kernel copies the whole
// size at every sample, so the size is most of what a sample costs the thread.
#ifndef INPROF_PLATFORM_LINUX_PERF_SELF_SAMPLING_LINUX_H_
#define INPROF_PLATFORM_LINUX_PERF_SELF_SAMPLING_LINUX_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "memory/large_alloc.h"
#include "perf_event_ring_linux.h"
#include "sampling/self_sampling.h"
#include "stack_regions_linux.h"

namespace inprof::internal {

// The most rings on any machine; a machine's own limit is ring_limits()'s, and how many really
// open is the memory budget's say (at the least size, 14 in the usual 516 KiB allowance per CPU on
// 2 CPUs).
inline constexpr size_t kMaxPerfThreads = 256;
inline constexpr size_t kLeastRingCap = 16;

// How many threads may have a ring, and the bytes their rings may map together, on a machine with
// `cpus` CPUs whose user may lock `allowance_kb_per_cpu` KiB of perf rings per CPU: busy threads
// beyond the CPU count still run (a timer would see only what the scheduler tick catches), and the
// kernel's allowance grows with the CPUs.
struct RingLimits {
  size_t rings = 0;
  size_t budget_bytes = 0;
};
RingLimits ring_limits(size_t cpus, size_t allowance_kb_per_cpu);
// Room kept for this many more rings at their least size when one opens (see open_ring()).
inline constexpr size_t kRingsKeptRoomFor = 7;

class PerfSelfSampling final : public SelfSampling {
 public:
  using LocateStack = std::function<std::optional<StackRegion>(uint64_t tid, uint64_t sp)>;

  // Null when the kernel refuses such events to this process (tried once, on the calling thread).
  static std::unique_ptr<PerfSelfSampling> create(LocateStack locate_stack, uint64_t interval_ns,
                                                  size_t stack_copy_size);
  ~PerfSelfSampling() override;

  // -1 when `labels` is not null (labels pushed without a record in the stack need a handler on
  // the thread), every ring is taken, the budget is spent, or the kernel refuses. The labels of
  // label scopes come with each sample, read from their records in the copied stack.
  int start(uint64_t tid, uint64_t sp, const LabelStack* labels) override;
  void stop(int handle) override;
  bool set_stack(int handle, uint64_t sp) override;
  // False once its ring could not be reopened (a resize the kernel refused): the sampler lets it
  // go and counts it, rather than wait for samples that cannot come.
  // Its samples come back cut at the most the kernel copies while a deeper copy was asked for
  // (Options::stack_copy_size), or its ring could not grow within the budget: a timer's handler
  // copies what stack_copy_size allows.
  bool too_deep(int handle) const { return valid(handle) && rings_[handle].too_deep; }
  bool still_allowed(int handle) override { return valid(handle) && rings_[handle].ring.is_open(); }
  void set_labels(int /*handle*/, const LabelStack* /*labels*/) override {}
  const StackSnapshot* front(int handle) override;
  void note_walk(int handle, uint64_t bytes_used, bool cut) override;
  void pop(int handle) override;
  Counts counts(int handle) const override;
  // Its wait() sleeps on the rings' wake-up descriptor, which interrupt_wait() also writes.
  Capabilities capabilities() const override { return {.wait_wakes = true}; }
  bool wait(uint64_t timeout_ns) override;
  void interrupt_wait() override;
  // kEveryTick while its stack size is still being found: every sample a ring holds when a cut
  // one is read comes back cut too, so a ring that has not yet gone kSettledSamples without a
  // cut is collected at every tick.
  CollectPeriod collect_period(int handle) const override;

  size_t active() const;
  bool full() const override { return active() == ring_cap_; }
  size_t capacity() const { return ring_cap_; }

 private:
  struct Ring {
    bool active = false;
    uint64_t tid = 0;
    std::optional<StackRegion> region;  // the mapping of its stack, as last located
    uint32_t grow_to = 0;               // a larger stack size asked for by a cut walk
    uint64_t deepest = 0;               // the most stack a walk used since the last resize
    uint64_t front_above = 0;           // the front snapshot's mapping above SP (0: unknown)
    uint32_t since_resize = 0;          // samples since the last resize
    uint32_t shrink_after = 0;          // samples before it may shrink (kResizeAfterSamples, more)
    bool too_deep = false;              // cut at the most the kernel copies (see too_deep())
    uint64_t answered = 0;
    PerfEventRing ring;
  };

  PerfSelfSampling(LocateStack locate_stack, uint64_t interval_ns, size_t stack_copy_size,
                   RingLimits limits);
  // Opens `r`'s ring for a stack of `stack_bytes`, within the budget; 0 or an errno.
  int open_ring(Ring& r, uint32_t stack_bytes);
  uint32_t stack_bytes_for(uint64_t depth) const;
  uint64_t records_per_ring(uint64_t collect_period_ns) const;
  size_t used_bytes() const;
  bool valid(int handle) const;

  const LocateStack locate_stack_;
  const uint64_t interval_ns_;
  const uint32_t max_stack_bytes_;
  const bool copy_wanted_deeper_;  // stack_copy_size asks for more than the kernel copies
  const size_t budget_bytes_;
  const size_t ring_cap_;
  std::unique_ptr<Ring[]> rings_;
  StackSnapshot snapshot_;  // what front() returns
  // A record that wraps around its ring's end. Mapped: kept for the session's life, it must not
  // grow the heap the program allocates from (tests/transparency/malloc_threshold).
  LargeArray<uint8_t> staging_;
  size_t staging_size_ = 0;
  // interrupt_wait() changes it and wakes a wait() sleeping on it (a futex: no descriptor).
  std::atomic<uint32_t> wake_word_{0};
  uint32_t handled_wake_ = 0;  // the last value of wake_word_ a wait() answered (sampler only)
};

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_PERF_SELF_SAMPLING_LINUX_H_
