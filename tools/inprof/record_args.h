// The arguments of `inprof record`: flags become the INPROF_* variables the preloaded library
// reads, every value checked here, before anything runs, with the library's own parser.
#ifndef INPROF_TOOLS_INPROF_RECORD_ARGS_H_
#define INPROF_TOOLS_INPROF_RECORD_ARGS_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace inprof::launcher {

struct RecordCommand {
  bool help = false;         // -h/--help: nothing else is filled in
  bool children = true;      // --no-children: PROGRAM alone
  bool open = false;         // --open: symbolicate and open at the end
  bool open_browser = true;  // --no-browser: --open prints the address
  bool quiet = false;        // -q/--quiet: nothing of ours on stderr but errors
  std::string port;          // --port N: --open serves there (empty: a free port)
  // Not empty: the Firefox Profiler profile (absolute, .json or .json.gz) to make of the run's
  // dumps when PROGRAM ends; the dumps are then temporary. Empty: raw dumps are the output
  // (--raw, -o NAME.inprof, or a flight-recorder or rotation flag).
  std::string profile;
  // Not empty: the directory (absolute) to create for the dumps, one per process: the
  // temporary one of a profile, or the default raw output when children are profiled.
  std::string run_directory;
  std::string output;                            // INPROF_OUTPUT, absolute
  std::map<std::string, std::string> variables;  // INPROF_* to set for the program
  std::vector<std::string> program;              // PROGRAM ARGS, after "--"
};

// `args` are those after "record"; the first word that is not an option (or the word after "--")
// starts PROGRAM. `inherited` reads the launcher's environment, which the program inherits (an
// INPROF_* set there counts too). `pid` is the launcher's: it names the run's directory, and is
// PROGRAM's when raw dumps are written (the launcher execs PROGRAM).
// On a mistake returns nothing and sets `error` to one line that names the flag as typed.
std::optional<RecordCommand> parse_record_args(
    const std::vector<std::string>& args, const std::function<const char*(const char*)>& inherited,
    uint64_t pid, std::string* error);

}  // namespace inprof::launcher

#endif  // INPROF_TOOLS_INPROF_RECORD_ARGS_H_
