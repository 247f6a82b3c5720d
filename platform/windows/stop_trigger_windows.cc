// The stop trigger on Windows: after a delay only. There is no signal to ask for a dump with.
#include <chrono>
#include <string>
#include <thread>

#include "process_info.h"
#include "stop_trigger.h"

namespace inprof::internal {

Status arm_stop_trigger(std::optional<std::chrono::nanoseconds> after, int signal) {
  if (signal != 0) {
    return Status::error(Status::Code::kPlatformError,
                         "a dump signal does not exist on Windows; use a duration");
  }
  if (!after) return {};
  static bool armed = false;  // called once, from the start-up path
  if (armed) return Status::error(Status::Code::kAlreadyRunning, "a stop trigger is already armed");
  armed = true;
  std::thread([deadline = monotonic_ns() + static_cast<uint64_t>(after->count())] {
    setup_profiler_thread("inprof-stopper");
    for (uint64_t now = monotonic_ns(); now < deadline; now = monotonic_ns()) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(deadline - now));
    }
    if (Profiler::is_running()) (void)Profiler::stop();
  }).detach();
  return {};
}

}  // namespace inprof::internal
