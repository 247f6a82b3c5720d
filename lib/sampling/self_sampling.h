// Self-sampling: instead of the sampler stopping a running thread, the OS interrupts the thread
// on its own (Linux: a timer on the thread's CPU-time clock, which only expires while it runs)
// and the thread's handler queues a snapshot of itself (SelfSampleQueue). The sampler only
// collects the queued snapshots, in batches. Offered by a StackCopier that can do it
// (StackCopier::self_sampling()); threads that sleep are taken by StackCopier::copy().
//
// Called from the sampler thread only.
#ifndef INPROF_LIB_SELF_SAMPLING_H_
#define INPROF_LIB_SELF_SAMPLING_H_

#include <cstdint>

#include "markers/label_stack.h"
#include "unwind/stack_snapshot.h"

namespace inprof::internal {

// How long a queue held for CollectPeriod::kCollectPeriod may go uncollected: when every busy
// thread's samples wait in such a queue and no other thread ran, the sampler ticks this seldom (a
// wake-up every millisecond cost a busy program 5-20 % where the sampler shares its CPU).
inline constexpr uint64_t kCollectPeriodNs = 4000000;
// Once every such queue has kept its size for kSettledForNs, the sampler ticks this seldom, at
// most every kSettledMaxIntervals intervals (a thread that starts to run is copied at the next
// tick, its sample weighed by the CPU it used: symbolicate represents up to 16 intervals). Its
// wake-ups cost a program that shares its CPU: xz -9 on one CPU, +12 % at 4 ms, +7 % at 16 ms.
// The price: a stack that deepens past its queue's copy after that long is cut in every sample
// the queue holds by then (marked truncated), up to this long's worth once, after which the queue
// grows and the ticks return to kCollectPeriodNs until it has settled again.
inline constexpr uint64_t kSettledCollectPeriodNs = 12000000;
inline constexpr uint64_t kSettledMaxIntervals = 12;
inline constexpr uint64_t kSettledForNs = 500000000;

class SelfSampling {
 public:
  virtual ~SelfSampling() = default;

  // Starts interrupting `tid` every interval. `sp` is where its stack was last seen (0: unknown;
  // it bounds the copies), `labels` its label stack (may be null). Returns a handle, or -1 when
  // the thread may not be interrupted (it blocks the signal, runs under seccomp), the OS refuses,
  // or every queue is taken; kAskAgainSoon when what the OS shows of it cannot be trusted yet
  // (it may be waking from a wait that showed another signal mask).
  virtual int start(uint64_t tid, uint64_t sp, const LabelStack* labels) = 0;
  static constexpr int kAskAgainSoon = -2;
  // Stops the interruptions. Snapshots still queued are discarded.
  virtual void stop(int handle) = 0;
  // Stops at once a thread that does not answer (it blocks the signal now): whatever
  // interruption is still pending for it is withdrawn, so that it can never be accepted by the
  // program (sigwait, signalfd).
  virtual void abandon(int handle) { stop(handle); }
  // Whether the thread may still be interrupted (checked now and then: it may have started to
  // block the signal, or entered seccomp, since start()).
  virtual bool still_allowed(int /*handle*/) { return true; }
  // The thread's stack moved (its SP left the mapping given to start()): `sp` is where it is now.
  // Returns whether a mapping holds `sp` (false: SP is in no memory at all).
  virtual bool set_stack(int /*handle*/, uint64_t /*sp*/) { return false; }
  // False once the program took the signal over (installed its own handler): no interruption
  // may be sent any more, and the sampler stops using self-sampling.
  virtual bool usable() { return true; }
  // Whether every timer or ring is taken: a start() refused now is refused for want of room, not
  // for the thread's sake.
  virtual bool full() const { return false; }
  // The label stack may appear after start() (the thread pushed its first label).
  virtual void set_labels(int handle, const LabelStack* labels) = 0;

  // The oldest queued snapshot, or null; valid until pop().
  virtual const StackSnapshot* front(int handle) = 0;
  // The snapshot at front() was unwound: the walk used `bytes_used` bytes above its SP (to the
  // outermost frame it reached), and ran out of copied stack if `cut`. Where the copy's size is
  // chosen per thread (the kernel copies the size it was given at every sample), this is what it
  // follows: the stack a walk needs, not the mapping above SP (which holds TLS and more).
  virtual void note_walk(int /*handle*/, uint64_t /*bytes_used*/, bool /*cut*/) {}
  virtual void pop(int handle) = 0;

  struct Counts {
    uint64_t answered = 0;  // interruptions the thread's handler ran for
    uint64_t missed = 0;    // interruptions that left no snapshot: the queue was full
  };
  // Running totals since start().
  virtual Counts counts(int handle) const = 0;

  // What the backend can do, fixed when it is made: the sampler asks once.
  struct Capabilities {
    // wait() sleeps until a queue needs collecting (the kernel samples at the threads' full rate
    // into queues that fill by themselves) or until interrupt_wait(), with or without queues: the
    // sampler then sleeps in wait() to its next tick and is woken early (a ring to collect, a
    // stop, a half-full allocation pool) instead of polling.
    bool wait_wakes = false;
  };
  virtual Capabilities capabilities() const { return {}; }
  // Waits at most `timeout_ns` for a queue to need collecting, or for interrupt_wait(); true if
  // a queue needs collecting.
  virtual bool wait(uint64_t /*timeout_ns*/) { return false; }
  // Ends a wait() in progress (or the next one) at once: a stop, a pause. Any thread.
  virtual void interrupt_wait() {}

  // How long the thread's snapshots may wait for the sampler.
  enum class CollectPeriod : uint8_t {
    // A queue the sampler must empty at every tick (a timer's handler queue, a ring still
    // finding its size).
    kEveryTick,
    // A queue that holds kCollectPeriodNs of them at the thread's full rate: the kernel's ring,
    // which wakes wait() when it fills, or a timer's queue with room for three times that.
    kCollectPeriod,
    // The same, and it has kept its size for kSettledForNs (see kSettledCollectPeriodNs).
    kSettledPeriod,
  };
  virtual CollectPeriod collect_period(int /*handle*/) const { return CollectPeriod::kEveryTick; }
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_SELF_SAMPLING_H_
