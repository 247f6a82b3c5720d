// Options from environment variables, for starting the profiler without changing the program
// (LD_PRELOAD=libinprof.so INPROF_STARTUP=1 ./app). One table describes every variable: the
// parser, INPROF_HELP and the README all come from it.
#ifndef INPROF_LIB_ENV_OPTIONS_H_
#define INPROF_LIB_ENV_OPTIONS_H_

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "inprof/profiler.h"

namespace inprof::internal {

struct EnvConfig {
  bool startup = false;  // INPROF_STARTUP: profile from load to exit
  bool help = false;     // INPROF_HELP: print the variables
  Options options;
  std::optional<std::chrono::nanoseconds> duration;  // INPROF_DURATION: stop after this long
  int dump_signal = 0;  // INPROF_SIGNAL_DUMP: stop and write the dump on this signal
  // INPROF_ROOT_PID: the process `inprof record` started; INPROF_CHILDREN=0: only that one is
  // profiled (its descendants inherit the variables).
  std::optional<uint64_t> root_pid;
  bool children = true;
  // INPROF_LIFEBOAT: where `inprof record` takes the ring of a process that ends without
  // stopping its session (session/lifeboat.h).
  std::string lifeboat;
  // INPROF_PULL: serve /debug/pprof/ there (pull/pull_server.h); INPROF_PULL_MAX_SECONDS: the
  // longest profile a scrape may ask for.
  std::string pull;
  uint64_t pull_max_seconds = 300;
  bool pull_symbols = true;   // INPROF_PULL_SYMBOLS=0: /debug/pprof/symbol names nothing
  bool output_given = false;  // INPROF_OUTPUT was set (else options.output_path is the default)
};

// Reads the variables through `getenv` (injectable for tests). On a bad value, returns nothing
// and says why in `error`, naming the variable. What it accepts, Profiler::start() accepts.
std::optional<EnvConfig> parse_env(const std::function<const char*(const char*)>& getenv,
                                   std::string* error);

// Checks one variable's (non-empty) value and stores it in `config`. A bad value returns what is
// wrong without naming the variable ("give a unit: 5s, 5ms"): parse_env names the variable,
// `inprof record` the flag the value came from, and both accept exactly the same values.
// An unknown name is accepted and ignored.
std::optional<std::string> apply_env_variable(const std::string& name, const std::string& value,
                                              EnvConfig* config);

// The help text: every variable, its meaning and an example.
std::string env_help();

// Expands "%p" to the process id in an output path.
std::string expand_output_path(const std::string& pattern, uint64_t pid);

// Parses a signal given by number or name ("SIGUSR2", "USR2", "12"); 0 if it is neither.
int parse_signal(const std::string& text);

}  // namespace inprof::internal

#endif  // INPROF_LIB_ENV_OPTIONS_H_
