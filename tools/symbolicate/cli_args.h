// symbolicate's command line: the usage text, and the arguments parsed into CliArgs. Only each
// value's own form is checked here; main.cc checks how they go together.
#ifndef INPROF_TOOLS_SYMBOLICATE_CLI_ARGS_H_
#define INPROF_TOOLS_SYMBOLICATE_CLI_ARGS_H_

#include <cstdio>
#include <string>

#include "serve/profile_server.h"
#include "symbolicate.h"

namespace inprof::symbolicate {

// What the command line asked for: the run's options, and what only the CLI uses.
struct CliArgs {
  RunOptions run;
  bool have_dump = false;
  bool have_output = false;
  bool open = false;         // --open
  bool open_browser = true;  // not --no-browser
  bool progress = true;      // not --no-progress, not --quiet
  bool no_cache = false;     // --no-cache
  bool folded_weight_given = false;
  std::string profiler_url = kProfilerOrigin;
  std::string load_path;  // --load: a saved profile to serve
  int port = 0;           // --port: 0 for any free one
};

// What parse_cli_args returns when the run goes on.
inline constexpr int kGoOn = -1;

// Fills `args` from argv. Returns kGoOn, or the exit status once --help or --version is printed
// or a usage error said.
int parse_cli_args(int argc, char** argv, CliArgs* args);

// Prints "symbolicate: MESSAGE (symbolicate --help ...)" to stderr; returns kExitUsage.
int usage_error(const std::string& message);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_CLI_ARGS_H_
