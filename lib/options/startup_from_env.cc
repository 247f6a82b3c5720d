// Profiling without code changes: when the library is loaded (LD_PRELOAD=libinprof.so, or linked
// in) with INPROF_STARTUP=1, a session starts before main() and its dump is written at exit, after
// INPROF_DURATION, or when INPROF_SIGNAL_DUMP arrives. Bad settings are reported on stderr and
// leave the program unprofiled; they never stop it.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "allocations/allocation_recorder.h"
#include "api/copies.h"
#include "inprof/profiler.h"
#include "options/env_options.h"
#include "options/option_limits.h"
#if defined(__linux__)
#include "pull/pull_server.h"
#endif
#include "session/lifeboat.h"
#include "session/process_info.h"
#include "session/stop_trigger.h"

namespace inprof::internal {
namespace {

// INPROF_PULL: scrapes sample with the settings the other variables give. Whether it serves.
bool serve_from_environment(const EnvConfig& config) {
#if defined(__linux__)
  PullSettings settings;
  settings.options = config.options;
  settings.max_seconds = config.pull_max_seconds;
  settings.symbols = config.pull_symbols;
  if (Status s = PullServer::start(config.pull, settings); !s) {
    std::fprintf(stderr, "inprof: not serving pprof: %s\n", s.message().c_str());
    return false;
  }
  return true;
#else
  (void)config;
  std::fprintf(stderr, "inprof: not serving pprof: pull mode is served on Linux only\n");
  return false;
#endif
}

// Pull mode's heap is what a session records from its start: with the allocation interposer in
// the process (or INPROF_ALLOCATIONS asked), a session runs for the scrapes from now on, as
// INPROF_STARTUP would start it, recording allocations (at the default rate unless asked).
void start_for_the_heap(EnvConfig& config) {
  const bool interposer = AllocationRecorder::instance().find_hooks();
  if (config.startup || (!interposer && config.options.allocation_sample_bytes == 0)) return;
  config.startup = true;
  if (config.options.allocation_sample_bytes == 0) {
    config.options.allocation_sample_bytes = kDefaultAllocationSampleBytes;
  }
}

void start_from_environment() {
  std::string error;
  auto config = parse_env([](const char* name) { return std::getenv(name); }, &error);
  if (!config) {
    std::fprintf(stderr, "inprof: not profiling: %s\n", error.c_str());
    return;
  }
  if (config->help) std::fputs(env_help().c_str(), stderr);
  set_lifeboat_dock(config->lifeboat);
  if (!config->pull.empty()) {
    // Decided before the pull thread exists: what the interposer's lookup writes, a session that
    // thread starts later reads.
    const bool startup_asked = config->startup;
    start_for_the_heap(*config);
    if (!serve_from_environment(*config)) config->startup = startup_asked;
  }
  if (!config->startup) return;
  // With INPROF_PULL and no INPROF_OUTPUT, the session runs for the scrapes: no dump grows.
  const bool for_scrapes = !config->pull.empty() && !config->output_given;
  if (Status s =
          for_scrapes ? here::start_for_scrapes(config->options) : Profiler::start(config->options);
      !s) {
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
