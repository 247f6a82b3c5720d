// The stop trigger on Windows: after a delay only. There is no signal to ask for a dump with.
#include "session/duration_stop.h"
#include "session/stop_trigger.h"

namespace inprof::internal {

Status arm_stop_trigger(std::optional<std::chrono::nanoseconds> after, int signal) {
  if (signal != 0) {
    return Status::error(Status::Code::kPlatformError,
                         "a dump signal does not exist on Windows; use a duration");
  }
  return after ? arm_duration_stop(*after) : Status{};
}

void disarm_stop_trigger() { disarm_duration_stop(); }

void disarm_stop_trigger_after_fork() {}

}  // namespace inprof::internal
