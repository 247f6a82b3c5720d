// Windows has no signal a program can be sent to ask for a capture: Profiler::capture() is the
// way there. Asking for a capture signal is refused with a clear message.
#include "session/signal_trigger.h"

namespace inprof::internal {

std::unique_ptr<SignalTrigger> SignalTrigger::create(int, const char*, std::function<void()>,
                                                     Status* status) {
  *status = Status::error(Status::Code::kPlatformError,
                          "capture signals do not exist on Windows; call Profiler::capture()");
  return nullptr;
}

void SignalTrigger::disarm_after_fork() {}

}  // namespace inprof::internal
