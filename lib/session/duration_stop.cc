#include "session/duration_stop.h"

#include <atomic>
#include <cstdint>
#include <thread>

#include "session/process_info.h"
#include "threads/profiler_threads.h"

namespace inprof::internal {
namespace {

// Cleared when the session it was armed for ends: the thread then leaves a later session alone.
std::atomic<bool> g_armed{false};

}  // namespace

Status arm_duration_stop(std::chrono::nanoseconds after) {
  if (g_armed.exchange(true)) {
    return Status::error(Status::Code::kAlreadyRunning, "a stop trigger is already armed");
  }
  std::thread([deadline = monotonic_ns() + static_cast<uint64_t>(after.count())] {
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

void disarm_duration_stop() { g_armed.store(false); }

}  // namespace inprof::internal
