// The public face of pull mode (pull/pull_server.h).
#include "inprof/profiler.h"

#if defined(__linux__)
#include "pull/pull_server.h"
#endif

namespace inprof {

#if defined(__linux__)
Status serve_pprof(std::string_view address, const Options& options) {
  internal::PullSettings settings;
  settings.options = options;
  return internal::PullServer::start(address, settings);
}

Status stop_serving_pprof() { return internal::PullServer::stop(); }
#else
Status serve_pprof(std::string_view, const Options&) {
  return Status::error(Status::Code::kPlatformError, "pull mode is served on Linux only");
}

Status stop_serving_pprof() {
  return Status::error(Status::Code::kNotRunning, "pull mode is not serving");
}
#endif

}  // namespace inprof
