// Stops a thread for the shortest possible moment, copies its registers and the top of its stack
// into a StackSnapshot, and lets it go. One implementation per OS (platform/<os>/): a signal and
// handshake on Linux, SuspendThread on Windows, thread_suspend on macOS.
//
// SUSPENDED: whatever runs while the target is stopped must not allocate, lock or log — the
// target may hold the allocator's or the loader's lock.
#ifndef INPROF_LIB_STACK_COPIER_H_
#define INPROF_LIB_STACK_COPIER_H_

#include <chrono>
#include <cstdint>
#include <memory>

#include "inprof/profiler.h"
#include "sampling/self_sampling.h"
#include "unwind/stack_snapshot.h"

namespace inprof::internal {

enum class CopyResult {
  kOk,
  kThreadGone,  // the thread exited
  kTimedOut,    // the thread did not answer in time (signals blocked, not scheduled)
  kRunning,     // the thread is on a CPU and may only be stopped by its own self-sampling
                // (Linux: copy() takes only threads asleep in the kernel)
  kFailed,      // the OS refused
};

class StackCopier {
 public:
  struct Config {
    int signal = 0;  // Linux: 0 picks SIGURG
    std::chrono::nanoseconds timeout = std::chrono::milliseconds(20);
    // The sampling interval: Windows raises its timer resolution while it is below 10 ms.
    std::chrono::nanoseconds interval = std::chrono::milliseconds(1);
    size_t stack_copy_size = 64 << 10;  // the most a copy takes (sizes self-sampling's queues)
    // False (no CPU samples): nothing is ever interrupted, so nothing is installed (Linux: no
    // signal handler); copy() is never called. Self-sampling still offers its wake-up.
    bool interrupts = true;
  };

  // Installs what the copier needs (a signal handler on Linux). Only one copier exists at a time.
  static std::unique_ptr<StackCopier> create(const Config& config, Status* status);
  // In a forked child: give the signal back to the program and allow a new copier, without
  // touching the parent's copier object (it is abandoned).
  static void release_after_fork();

  virtual ~StackCopier() = default;
  // Fills `out` (whose buffer and capacity the caller set) from thread `tid`. Returns once the
  // thread runs again. Called from the sampler thread only. Where interrupting a running thread
  // could change what the program sees (Linux), only a thread that is not running is copied.
  virtual CopyResult copy(uint64_t tid, StackSnapshot& out) = 0;
  // Threads that interrupt themselves (self_sampling.h), where the OS allows it; null otherwise.
  virtual SelfSampling* self_sampling() { return nullptr; }
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_STACK_COPIER_H_
