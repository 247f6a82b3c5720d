// Capture signals are not implemented on macOS yet: Profiler::capture() is the way there. Asking
// for one is refused with a clear message.
#include "session/signal_trigger.h"

namespace inprof::internal {

std::unique_ptr<SignalTrigger> SignalTrigger::create(int, const char*, std::function<void()>,
                                                     Status* status) {
  *status = Status::error(Status::Code::kPlatformError,
                          "capture signals are not implemented on macOS yet; call "
                          "Profiler::capture()");
  return nullptr;
}

void SignalTrigger::disarm_after_fork() {}

}  // namespace inprof::internal
