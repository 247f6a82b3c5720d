// The stop trigger on Linux: the signal handler bumps a counter and wakes the thread waiting on
// it with futex(2) (both async-signal-safe); the thread waits with the remaining time as its
// timeout, then stops the profiler. No descriptor: none to leak into the program or its
// children, none to close under a handler still running on another thread.
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>

#include "session/process_info.h"
#include "session/stop_trigger.h"
#include "signal_disposition_linux.h"
#include "threads/profiler_threads.h"

namespace inprof::internal {
namespace {

std::atomic<uint32_t> g_wakeups{0};
// Bumped by every arm and disarm: a thread whose trigger was disarmed leaves without stopping.
std::atomic<uint64_t> g_generation{0};
std::atomic<bool> g_armed{false};
int g_stop_signal = 0;  // 0: armed without a signal, or not armed
struct sigaction g_stop_previous = {};
long g_stop_owner = 0;  // the process that armed it: a forked child is not

void wake_thread() {
  g_wakeups.fetch_add(1);
  syscall(SYS_futex, &g_wakeups, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

void on_dump_signal(int signal) {
  const int saved = errno;
  if (syscall(SYS_getpid) == g_stop_owner) {
    wake_thread();
  } else {
    pass_on_in_child(signal, on_dump_signal, g_stop_previous);
  }
  errno = saved;
}

void give_signal_back() {
  if (g_stop_signal != 0) restore_if_still_ours(g_stop_signal, on_dump_signal, g_stop_previous);
  g_stop_signal = 0;
}

}  // namespace

Status arm_stop_trigger(std::optional<std::chrono::nanoseconds> after, int signal) {
  if (g_armed.load()) {
    return Status::error(Status::Code::kAlreadyRunning, "a stop trigger is already armed");
  }
  if (signal != 0) {
    struct sigaction previous = {};
    sigaction(signal, nullptr, &previous);
    if ((previous.sa_flags & SA_SIGINFO) ||
        (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN)) {
      return Status::error(Status::Code::kSignalInUse,
                           "the dump signal is already handled by the program; not armed");
    }
    g_stop_previous = previous;
    g_stop_signal = signal;
    g_stop_owner = syscall(SYS_getpid);
    struct sigaction action = {};
    action.sa_handler = on_dump_signal;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(signal, &action, nullptr);
  }
  g_armed.store(true);
  const uint64_t generation = ++g_generation;
  const uint64_t deadline = after ? monotonic_ns() + static_cast<uint64_t>(after->count()) : 0;
  const uint32_t seen = g_wakeups.load();
  ProfilerThread stopper;
  if (!stopper.start("inprof-stopper", [deadline, generation, seen] {
        for (;;) {
          if (g_generation.load() != generation) return;  // the session ended otherwise
          if (g_wakeups.load() != seen) break;            // the dump signal
          timespec timeout{};
          if (deadline != 0) {
            const uint64_t now = monotonic_ns();
            if (now >= deadline) break;
            timeout.tv_sec = static_cast<time_t>((deadline - now) / 1000000000u);
            timeout.tv_nsec = static_cast<long>((deadline - now) % 1000000000u);
          }
          syscall(SYS_futex, &g_wakeups, FUTEX_WAIT_PRIVATE, seen, deadline ? &timeout : nullptr,
                  nullptr, 0);
        }
        if (g_generation.load() == generation) (void)Profiler::stop();
      })) {
    g_armed.store(false);
    give_signal_back();
    return Status::error(Status::Code::kPlatformError, "the system refused the stopping thread");
  }
  stopper.detach();
  return {};
}

void disarm_stop_trigger() {
  if (!g_armed.exchange(false)) return;
  give_signal_back();
  ++g_generation;
  wake_thread();
}

void disarm_stop_trigger_after_fork() {
  if (!g_armed.exchange(false)) return;
  give_signal_back();
  ++g_generation;
}

}  // namespace inprof::internal
