// The stop trigger on Windows: after a delay only. There is no signal to ask for a dump with.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "session/process_info.h"
#include "session/stop_trigger.h"
#include "threads/profiler_threads.h"

namespace inprof::internal {
namespace {

// Cleared when the session it was armed for ends: the thread then leaves a later session alone.
std::atomic<bool> g_armed{false};

}  // namespace

Status arm_stop_trigger(std::optional<std::chrono::nanoseconds> after, int signal) {
  if (signal != 0) {
    return Status::error(Status::Code::kPlatformError,
                         "a dump signal does not exist on Windows; use a duration");
  }
  if (!after) return {};
  if (g_armed.exchange(true)) {
    return Status::error(Status::Code::kAlreadyRunning, "a stop trigger is already armed");
  }
  std::thread([deadline = monotonic_ns() + static_cast<uint64_t>(after->count())] {
    // Marked before it is named: a sampler that sees it first sees no inprof name.
    const ProfilerThreadMark never_sampled;
    setup_profiler_thread("inprof-stopper");
    for (uint64_t now = monotonic_ns(); now < deadline; now = monotonic_ns()) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(deadline - now));
    }
    if (g_armed.load()) (void)Profiler::stop();
  }).detach();
  return {};
}

void disarm_stop_trigger() { g_armed.store(false); }

void disarm_stop_trigger_after_fork() {}

}  // namespace inprof::internal
