// Self-sampling: instead of the sampler stopping a busy thread every tick (a round trip through
// the scheduler each time), the OS interrupts the thread on its own every interval (Linux: a
// per-thread timer) and the thread's handler queues a snapshot of itself (SelfSampleQueue). The
// sampler only collects the queued snapshots, in batches. Offered by a StackCopier that can do
// it (StackCopier::self_sampling()); threads that mostly sleep stay with StackCopier::copy().
//
// Called from the sampler thread only.
#ifndef INPROF_LIB_SELF_SAMPLING_H_
#define INPROF_LIB_SELF_SAMPLING_H_

#include <cstdint>

#include "label_stack.h"
#include "stack_snapshot.h"

namespace inprof::internal {

class SelfSampling {
 public:
  virtual ~SelfSampling() = default;

  // Starts interrupting `tid` every interval. `sp` is where its stack was last seen (it bounds
  // the copies), `labels` its label stack (may be null). Returns a handle, or -1 when the OS
  // refuses or every queue is taken: the thread is then copied as before.
  virtual int start(uint64_t tid, uint64_t sp, const LabelStack* labels) = 0;
  // Stops the interruptions. Snapshots still queued are discarded.
  virtual void stop(int handle) = 0;
  // The label stack may appear after start() (the thread pushed its first label).
  virtual void set_labels(int handle, const LabelStack* labels) = 0;

  // The oldest queued snapshot, or null; valid until pop().
  virtual const StackSnapshot* front(int handle) = 0;
  virtual void pop(int handle) = 0;

  struct Counts {
    uint64_t answered = 0;  // interruptions the thread's handler ran for
    uint64_t missed = 0;    // interruptions that left no snapshot: the queue was full
  };
  // Running totals since start().
  virtual Counts counts(int handle) const = 0;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_SELF_SAMPLING_H_
