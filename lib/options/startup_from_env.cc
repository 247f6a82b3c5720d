// Profiling without code changes: when the library is loaded (LD_PRELOAD=libinprof.so, or linked
// in) with INPROF_STARTUP=1, a session starts before main() and its dump is written at exit, after
// INPROF_DURATION, or when INPROF_SIGNAL_DUMP arrives. Bad settings are reported on stderr and
// leave the program unprofiled; they never stop it.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "api/copies.h"
#include "inprof/profiler.h"
#include "options/env_options.h"
#if defined(__linux__)
#include "pull/pull_server.h"
#endif
#include "session/lifeboat.h"
#include "session/process_info.h"
#include "session/stop_trigger.h"

namespace inprof::internal {
namespace {

// INPROF_PULL: scrapes sample with the settings the other variables give.
void serve_from_environment(const EnvConfig& config) {
#if defined(__linux__)
  PullSettings settings;
  settings.options = config.options;
  settings.max_seconds = config.pull_max_seconds;
  settings.symbols = config.pull_symbols;
  if (Status s = PullServer::start(config.pull, settings); !s) {
    std::fprintf(stderr, "inprof: not serving pprof: %s\n", s.message().c_str());
  }
#else
  (void)config;
  std::fprintf(stderr, "inprof: not serving pprof: pull mode is served on Linux only\n");
#endif
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
  if (!config->pull.empty()) serve_from_environment(*config);
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
