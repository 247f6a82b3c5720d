// For unwinder tests only: a snapshot of a running thread taken at once, by sending it a signal
// (SIGRTMIN + 6, not used by the targets) whose handler copies its registers and stack the way the
// library's handler does. The library itself never signals a thread like this (it could cut a
// sleeping call short); tests of the unwinder need thousands of stacks at arbitrary instructions,
// faster than the library's CPU-time timers (which follow the kernel's tick) can give them.
#ifndef INPROF_TESTS_SIGNAL_SNAPSHOT_H_
#define INPROF_TESTS_SIGNAL_SNAPSHOT_H_

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "stack_regions_linux.h"
#include "thread_stack_copy_linux.h"
#include "unwind/stack_snapshot.h"
#if defined(__x86_64__)
#include "ucontext_registers_x86_64.h"
#elif defined(__aarch64__)
#include "ucontext_registers_aarch64.h"
#endif

namespace inprof::testing {

class SignalSnapshot {
 public:
  SignalSnapshot() {
    struct sigaction action = {};
    action.sa_sigaction = &SignalSnapshot::handler;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGRTMIN + 6, &action, &previous_);
  }
  ~SignalSnapshot() { sigaction(SIGRTMIN + 6, &previous_, nullptr); }

  // Fills `out` from thread `tid` (which must not block the signal). False after `limit`
  // unanswered.
  bool take(uint64_t tid, internal::StackSnapshot& out,
            std::chrono::seconds limit = std::chrono::seconds(10)) {
    internal::read_stack_regions(&regions_);
    target_ = &out;
    regions_data_ = regions_.data();
    region_count_ = regions_.size();
    done_.store(false);
    syscall(SYS_tgkill, getpid(), static_cast<pid_t>(tid), SIGRTMIN + 6);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done_.load()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
    return true;
  }

 private:
  static void handler(int, siginfo_t*, void* context) {
    internal::StackSnapshot* out = target_;
    internal::capture_registers(static_cast<const ucontext_t*>(context), out->regs);
    internal::copy_own_stack(
        out, internal::find_stack_region(regions_data_, region_count_, out->sp()), getpid());
    out->registers_partial = false;
    out->stack_region_known = true;
    done_.store(true);
  }

  struct sigaction previous_ = {};
  std::vector<internal::StackRegion> regions_;
  static inline internal::StackSnapshot* target_ = nullptr;
  static inline const internal::StackRegion* regions_data_ = nullptr;
  static inline size_t region_count_ = 0;
  static inline std::atomic<bool> done_{false};
};

}  // namespace inprof::testing

#endif  // INPROF_TESTS_SIGNAL_SNAPSHOT_H_
