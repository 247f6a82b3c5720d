// Crash capture is not implemented on macOS. Linux's handler runs on the crashing thread and
// hands it to the sampler; on macOS a crash would best be caught as a Mach exception on a thread
// of ours (the crashing thread then stopped, as the suspend copier stops threads), which is not
// written, nor could it be tried here without a Mac. Asking for it fails with a clear message.
#include "session/crash_handler.h"

namespace inprof::internal {

std::unique_ptr<CrashHandler> CrashHandler::install(const std::string&, CrashWriter*, Sampler*,
                                                    Status* status, const std::string&) {
  *status =
      Status::error(Status::Code::kPlatformError, "crash capture is not implemented on macOS yet");
  return nullptr;
}

void CrashHandler::disarm_after_fork() {}

}  // namespace inprof::internal
