// Profiling without code changes: when the library is loaded (LD_PRELOAD=libinprof.so, or linked
// in) with INPROF_STARTUP=1, a session starts before main() and its dump is written at exit, after
// INPROF_DURATION, or when INPROF_SIGNAL_DUMP arrives. Bad settings are reported on stderr and
// leave the program unprofiled; they never stop it.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "inprof/profiler.h"
#include "options/env_options.h"
#include "session/lifeboat.h"
#include "session/process_info.h"
#include "session/stop_trigger.h"

namespace inprof::internal {
namespace {

void start_from_environment() {
  std::string error;
  auto config = parse_env([](const char* name) { return std::getenv(name); }, &error);
  if (!config) {
    std::fprintf(stderr, "inprof: not profiling: %s\n", error.c_str());
    return;
  }
  if (config->help) std::fputs(env_help().c_str(), stderr);
  set_lifeboat_dock(config->lifeboat);
  if (!config->startup) return;
  if (Status s = Profiler::start(config->options); !s) {
    std::fprintf(stderr, "inprof: not profiling: %s\n", s.message().c_str());
    return;
  }
  if (config->duration || config->dump_signal) {
    Status s = arm_stop_trigger(config->duration, config->dump_signal);
    if (!s) std::fprintf(stderr, "inprof: %s\n", s.message().c_str());
  }
}

__attribute__((constructor)) void inprof_startup_constructor() { start_from_environment(); }

}  // namespace
}  // namespace inprof::internal
