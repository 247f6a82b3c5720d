// SelfSampling on Linux: a per-thread POSIX timer (CLOCK_MONOTONIC, SIGEV_THREAD_ID) sends the
// sampling signal straight to its thread every interval; the handler, on that thread, copies its
// registers and the top of its stack into the thread's SelfSampleQueue. No thread of ours wakes
// up for it, so the rate holds even when the sampler thread waits for a CPU.
//
// The queues ("mailboxes") are found by the handler through a fixed table indexed by the timer's
// si_value (index and generation), so a late signal of a stopped timer finds a newer generation
// and does nothing. Memory per self-sampled thread: kSelfSampleEntries snapshots (~1.7 KB each)
// plus an arena of 2 x the stack copy size (128 KiB with the default 64 KiB), allocated when a
// mailbox is first used and reused after; at most kMaxSelfSampledThreads mailboxes.
#ifndef INPROF_PLATFORM_LINUX_SELF_SAMPLING_LINUX_H_
#define INPROF_PLATFORM_LINUX_SELF_SAMPLING_LINUX_H_

#include <signal.h>
#include <ucontext.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "self_sampling.h"
#include "stack_regions_linux.h"

namespace inprof::internal {

inline constexpr size_t kMaxSelfSampledThreads = 64;
inline constexpr size_t kSelfSampleEntries = 32;

class LinuxSelfSampling final : public SelfSampling {
 public:
  // `regions` (the copier's table of mappings) tells start() where a thread's stack lies.
  LinuxSelfSampling(int signal, uint64_t interval_ns, size_t stack_copy_size,
                    const std::vector<StackRegion>& regions);
  // Stops every timer and waits (bounded) for handlers still running before freeing the queues.
  // The caller has already made the signal ignored, so no new handler starts.
  ~LinuxSelfSampling() override;
  // Stops every timer, waiting (bounded) for each thread to disarm its own (see stop()).
  void stop_all();

  int start(uint64_t tid, uint64_t sp, const LabelStack* labels) override;
  // Asks the thread's handler to disarm its timer at its next run; the timer is deleted once it
  // has (or after a while). Deleting a timer whose signal is pending makes Linux drop the signal
  // without running the handler, and a sleeping call it woke would return EINTR that nothing
  // can tell from the program's own: a disarm from the handler leaves no signal pending.
  void stop(int handle) override;
  void set_labels(int handle, const LabelStack* labels) override;
  const StackSnapshot* front(int handle) override;
  void pop(int handle) override;
  Counts counts(int handle) const override;

 private:
  const int signal_;
  const uint64_t interval_ns_;
  const size_t stack_copy_size_;
  const std::vector<StackRegion>& regions_;
  // Deletes the timers of stopping mailboxes that disarmed (or waited long enough); `force`: all.
  void reap(bool force);

  enum class Slot : uint8_t { kFree, kActive, kStopping };
  Slot slots_[kMaxSelfSampledThreads] = {};
  uint64_t stop_deadline_ns_[kMaxSelfSampledThreads] = {};
};

// SUSPENDED: the handler's work for a signal sent by a self-sampling timer (si_code SI_TIMER).
void on_self_sample_signal(const siginfo_t* info, const ucontext_t* context, int pid);

// In a forked child: the parent's mailboxes are not ours to reuse (the child has no timers).
void self_sampling_release_after_fork();

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_SELF_SAMPLING_LINUX_H_
