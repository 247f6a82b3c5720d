// Crash capture is not implemented on Windows yet (it would be a vectored exception handler
// writing the raw crash capture of FORMAT.md). Asking for it fails with a clear message rather
// than silently capturing nothing.
#include "session/crash_handler.h"

namespace inprof::internal {

std::unique_ptr<CrashHandler> CrashHandler::install(const std::string&, CrashWriter*, Sampler*,
                                                    Status* status, const std::string&) {
  *status = Status::error(Status::Code::kPlatformError,
                          "crash capture is not implemented on Windows yet");
  return nullptr;
}

void CrashHandler::disarm_after_fork() {}

}  // namespace inprof::internal
