// SelfSampling on Linux: a per-thread POSIX timer on the thread's own CPU-time clock
// (SIGEV_THREAD_ID) sends the sampling signal to its thread after each interval of CPU it used;
// the handler, on that thread, copies its registers and the top of its stack into the thread's
// SelfSampleQueue.
//
// Why the CPU-time clock: such a timer only expires while its thread runs, and the kernel
// (5.10+ on x86-64, where CPU timers run as task work) delivers the signal on the thread's way
// back to user mode. So the signal never finds the thread asleep in a system call: no sleep is
// cut short, no EINTR, and a sleeping thread costs nothing. The kernel checks CPU timers at its
// scheduler tick (4 ms at HZ=250): at finer intervals, the expirations of one tick are merged
// (si_overrun) and one stack stands for all of them.
//
// A thread that blocks the signal or runs under seccomp is never given a timer (start() reads its
// /proc status first); one that starts blocking it later stops answering, and abandon() deletes
// its timer and withdraws the pending signal.
//
// The queues ("mailboxes") are found by the handler through a fixed table indexed by the timer's
// si_value (index and generation), so a late signal of a stopped timer finds a newer generation
// and does nothing. Mailboxes are made when first needed and reused after, within one budget
// whatever the thread count: the first kDeepMailboxes hold kSelfSampleEntries snapshots (~1.7 KB
// each) and an arena of 2 x the stack copy size (572 KiB with the default 256 KiB); the others
// half the snapshots and copies of at most kShallowCopyBytes, as the kernel's rings take (their
// deeper stacks end there). At most kMaxSelfSampledThreads mailboxes (and timers: each holds one
// slot of RLIMIT_SIGPENDING): 4.6 + 56 x 0.15 MiB = 13 MiB of address space at most.
#ifndef INPROF_PLATFORM_LINUX_SELF_SAMPLING_LINUX_H_
#define INPROF_PLATFORM_LINUX_SELF_SAMPLING_LINUX_H_

#include <signal.h>
#include <ucontext.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>

#include "sampling/self_sampling.h"
#include "stack_regions_linux.h"

namespace inprof::internal {

inline constexpr size_t kMaxSelfSampledThreads = 64;
inline constexpr size_t kSelfSampleEntries = 32;
inline constexpr size_t kDeepMailboxes = 8;
inline constexpr size_t kShallowCopyBytes = 64 << 10;
// The stack the timer's handler needs below its first frame, twice what it uses: -fstack-usage
// gives on_self_sample_signal (fill() inlined) 256 bytes, copy_own_stack 48, kernel_copy 64, the
// signal entry 48, and libc's syscall() and the vDSO's clock a few dozen more (nothing is bound
// lazily: libinprof.so is linked -z now). A thread with less left, on its alternate stack or its
// own, is given up.
inline constexpr uint64_t kHandlerStackBytes = 1024;
// What a program's own handler is assumed to use of its alternate stack besides the kernel's frame.
// A thread running that handler takes our signal there too, below it: the kernel checks that our
// frame fits and kills the thread with SIGSEGV when it does not ("overflowed sigaltstack"). An
// alternate stack smaller than this, two frames and our handler is never given a timer again.
inline constexpr uint64_t kProgramHandlerStackBytes = 4096;

// What the timer's handler found of the stack it runs on (Mailbox::short_of_stack).
enum class StackVerdict : uint32_t { kEnough = 0, kOwnStackShort = 1, kAltStackTooSmall = 2 };
// A thread whose stack is smaller than this is not timer-sampled. A timer's signal lands wherever
// the thread is at that moment; the kernel's frame (3.3 KiB with AVX-512) and our handler go
// below it, and a thread with a stack this small may well be running within that of its end
// (PTHREAD_STACK_MIN is 16 KiB; musl's default stack is 128 KiB). The sampler learns a thread's
// stack at its first sample and counts what it gives up; kernel rings sample such a thread
// without touching its stack.
inline constexpr uint64_t kSmallestTimerStack = 64 << 10;
// A mailbox that holds this many snapshots of its thread's stack is collected every
// kCollectPeriodNs rather than at every tick. The kernel checks CPU timers at its scheduler tick
// (HZ at most 1,000), so a thread sends at most one signal a millisecond, 4 in a collect period:
// three times that leaves room for a late sampler. Without it, a timer-sampled thread kept the
// sampler waking at every interval (58 ms of its CPU a second at 1 ms, against 12 for the rings).
inline constexpr size_t kSnapshotsForCollectPeriod = 12;

// What self-sampling needs from the copier that owns the signal.
struct SamplingSignalOwner {
  int signal = 0;
  // The mapping that holds `sp` in thread `tid`'s view, re-reading the mappings if needed.
  std::function<std::optional<StackRegion>(uint64_t tid, uint64_t sp)> locate_stack;
  // Whether the signal's disposition is still our handler.
  std::function<bool()> handler_installed;
  // Installs our handler before the first timer (false: the program has a handler of its own
  // now), and gives the signal back after the last: while no thread is on a timer the program's
  // disposition is its own (an ignored SIGURG from its socket interrupts nothing).
  std::function<bool()> acquire;
  std::function<void()> release;
  // Discards every instance of the signal still pending in any thread, where the kernel would
  // otherwise deliver a deleted timer's signal (before Linux 6.13); nothing on kernels that drop
  // it themselves, where ignoring the signal would park the other timers' pending signals and send
  // them again when our handler comes back, to threads that may sleep by then.
  std::function<void()> withdraw_pending;
};

class LinuxSelfSampling final : public SelfSampling {
 public:
  LinuxSelfSampling(SamplingSignalOwner owner, uint64_t interval_ns, size_t stack_copy_size);
  // Stops every timer and waits (bounded) for handlers still running before freeing the queues.
  // The caller has already made the signal ignored, so no new handler starts.
  ~LinuxSelfSampling() override;
  // Stops every timer, waiting (bounded) for each thread to disarm its own (see stop()).
  void stop_all();

  int start(uint64_t tid, uint64_t sp, const LabelStack* labels) override;
  // Asks the thread's handler to disarm its timer at its next run; the timer is deleted once it
  // has (or after a while). Deleting a timer whose signal is pending leaves that signal pending
  // on older kernels: a disarm from the handler leaves nothing pending.
  void stop(int handle) override;
  void abandon(int handle) override;
  bool set_stack(int handle, uint64_t sp) override;
  bool still_allowed(int handle) override;
  // Given up because of the thread's alternate stack: only a kernel ring may sample it from now on
  // (a timer's next signal could land while the program's handler runs there).
  bool refused_for_alt_stack(int handle) const;
  bool usable() override;
  bool full() const override;
  void set_labels(int handle, const LabelStack* labels) override;
  const StackSnapshot* front(int handle) override;
  void pop(int handle) override;
  Counts counts(int handle) const override;
  // kCollectPeriod once its snapshots show that kSnapshotsForCollectPeriod of them fit.
  CollectPeriod collect_period(int handle) const override;

 private:
  // Deletes the timers of stopping mailboxes that disarmed (or waited long enough); `force`: all.
  void reap(bool force);
  void release(size_t index);
  bool any_timer() const;
  // Whether `tid` may be given a timer: it neither blocks the signal nor runs under seccomp
  // (kUnsure: its mask as shown may be a wait's, not its own).
  enum class SignalVerdict { kAllowed, kRefused, kUnsure };
  SignalVerdict may_take_signal(uint64_t tid);
  // Starts mailbox `index`'s timer on `tid`; its handle, or -1.
  int arm(size_t index, uint64_t tid, uint64_t sp, const LabelStack* labels);

  const SamplingSignalOwner owner_;
  const uint64_t interval_ns_;
  const size_t stack_copy_size_;
  bool usable_ = true;
  bool signal_held_ = false;  // owner_.acquire() succeeded and no release() since

  // A thread's reading that could not be trusted yet: the next is, if it ran meanwhile and
  // went to sleep no more times than this one counted.
  struct UnsureReading {
    uint64_t voluntary_switches;
    uint64_t cpu_ns;
  };
  static constexpr size_t kMostUnsureThreads = 4096;
  std::unordered_map<uint64_t, UnsureReading> unsure_;

  enum class Slot : uint8_t { kFree, kActive, kStopping };
  Slot slots_[kMaxSelfSampledThreads] = {};
  // The largest copies of each mailbox's recent snapshots: what its handler reserved (the stack
  // above SP, all it may take until the sampler has told it the thread's stack) and what it used.
  struct RecentCopies {
    size_t reserved[2] = {};  // this window's largest, the last window's
    size_t used[2] = {};
    uint32_t in_window = 0;
    void note(const StackSnapshot& snapshot);
    size_t largest_reserved() const { return std::max(reserved[0], reserved[1]); }
    size_t largest_used() const { return std::max(used[0], used[1]); }
  };
  static constexpr uint32_t kCopyWindow = 16;  // snapshots
  RecentCopies recent_copies_[kMaxSelfSampledThreads] = {};
  uint64_t stop_deadline_ns_[kMaxSelfSampledThreads] = {};
};

// SUSPENDED: the handler's work for a signal sent by a self-sampling timer (si_code SI_TIMER).
void on_self_sample_signal(const siginfo_t* info, const ucontext_t* context, int pid);

// In a forked child: the parent's mailboxes are not ours to reuse (the child has no timers), and
// no handler of the child is inside one.
void self_sampling_release_after_fork();

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_SELF_SAMPLING_LINUX_H_
