// The stop trigger on macOS: after a delay only, for now. A dump signal (the Linux build's
// sigaction + wake-up thread) is not written for macOS yet: asking for one fails clearly.
#include "session/duration_stop.h"
#include "session/stop_trigger.h"

namespace inprof::internal {

Status arm_stop_trigger(std::optional<std::chrono::nanoseconds> after, int signal) {
  if (signal != 0) {
    return Status::error(Status::Code::kPlatformError,
                         "a dump signal is not implemented on macOS yet; use a duration");
  }
  return after ? arm_duration_stop(*after) : Status{};
}

void disarm_stop_trigger() { disarm_duration_stop(); }

void disarm_stop_trigger_after_fork() { disarm_duration_stop(); }

}  // namespace inprof::internal
