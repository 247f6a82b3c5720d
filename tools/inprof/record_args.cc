#include "record_args.h"

#include <cstdint>

#include "options/env_options.h"
#include "output_path.h"

namespace inprof::launcher {
namespace {

struct ValueFlag {
  const char* short_name;  // may be null
  const char* long_name;
  const char* variable;
  bool ring;  // a flight-recorder setting: implies --ring
};

constexpr ValueFlag kValueFlags[] = {
    {"-o", "--output", "INPROF_OUTPUT", false},
    {"-i", "--interval", "INPROF_INTERVAL", false},
    {"-d", "--duration", "INPROF_DURATION", false},
    {"-t", "--threads", "INPROF_THREADS", false},
    {"-u", "--unwinder", "INPROF_UNWINDER", false},
    {nullptr, "--dump-signal", "INPROF_SIGNAL_DUMP", false},
    {nullptr, "--rotate", "INPROF_ROTATE", false},
    {nullptr, "--keep", "INPROF_KEEP_FILES", false},
    {nullptr, "--ring-seconds", "INPROF_RING_SECONDS", true},
    {nullptr, "--capture-signal", "INPROF_SIGNAL_CAPTURE", true},
};

const ValueFlag* find_flag(const std::string& name) {
  for (const ValueFlag& f : kValueFlags) {
    if ((f.short_name && name == f.short_name) || name == f.long_name) return &f;
  }
  return nullptr;
}

// The flag and its value as the user typed them, for messages: "-i fast", "--interval=fast".
std::string as_typed(const std::string& flag, const std::string& value, bool joined) {
  const std::string shown = value.empty() ? "''" : value;
  return joined ? flag + "=" + shown : flag + " " + shown;
}

}  // namespace

std::optional<RecordCommand> parse_record_args(
    const std::vector<std::string>& args, const std::function<const char*(const char*)>& inherited,
    uint64_t pid, std::string* error) {
  RecordCommand command;
  command.variables["INPROF_STARTUP"] = "1";
  std::optional<std::string> output_typed;  // "-o PATH" as typed, for its messages
  // Each flag's value goes through the parser the library will run on it, alone, so that a bad
  // one is named by its flag rather than by its variable.
  internal::EnvConfig scratch;
  size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) {
    const std::string& arg = args[i];
    if (arg == "-h" || arg == "--help") {
      command.help = true;
      return command;
    }
    if (arg == "--no-children") {
      command.children = false;
      continue;
    }
    if (arg == "--children") {
      command.children = true;
      continue;
    }
    if (arg == "--open") {
      command.open = true;
      continue;
    }
    if (arg == "--no-browser") {
      command.open_browser = false;
      continue;
    }
    if (arg == "--ring") {
      command.variables["INPROF_MODE"] = "ring";
      continue;
    }
    if (arg == "--allocations" || arg.rfind("--allocations=", 0) == 0) {
      const std::string value = arg.size() > 14 ? arg.substr(14) : "on";
      if (auto why = internal::apply_env_variable("INPROF_ALLOCATIONS", value, &scratch)) {
        *error = arg + ": " + *why;
        return std::nullopt;
      }
      command.variables["INPROF_ALLOCATIONS"] = value;
      continue;
    }
    if (arg == "--no-cpu") {
      command.variables["INPROF_CPU"] = "0";
      continue;
    }
    if (arg == "--crash") {
      command.variables["INPROF_MODE"] = "ring";
      command.variables["INPROF_CRASH"] = "1";
      continue;
    }
    const size_t equals = arg.rfind("--", 0) == 0 ? arg.find('=') : std::string::npos;
    const std::string name = arg.substr(0, equals);
    const ValueFlag* flag = find_flag(name);
    if (!flag) {
      if (!arg.empty() && arg[0] != '-') {
        *error = "'" + arg + "' is not an option: put '--' before the program (inprof record " +
                 "[options] -- " + arg + " ...)";
      } else {
        *error = "unknown option '" + arg + "' (inprof record --help lists them)";
      }
      return std::nullopt;
    }
    std::string value;
    if (equals != std::string::npos) {
      value = arg.substr(equals + 1);
    } else if (i + 1 < args.size() && args[i + 1] != "--") {
      value = args[++i];
    } else {
      *error = name + " needs a value";
      return std::nullopt;
    }
    const std::string typed = as_typed(name, value, equals != std::string::npos);
    if (value.empty()) {
      *error = typed + ": empty value";
      return std::nullopt;
    }
    if (auto why = internal::apply_env_variable(flag->variable, value, &scratch)) {
      *error = typed + ": " + *why;
      return std::nullopt;
    }
    if (flag->ring) command.variables["INPROF_MODE"] = "ring";
    if (flag->variable == std::string("INPROF_OUTPUT")) output_typed = typed;
    command.variables[flag->variable] = value;
  }
  if (i >= args.size()) {
    *error = "missing '--' before the program (inprof record [options] -- PROGRAM [ARGS...])";
    return std::nullopt;
  }
  if (i + 1 >= args.size()) {
    *error = "missing program after '--'";
    return std::nullopt;
  }
  command.program.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());

  // The dump's path is always given to the program, absolute: a relative one (the default
  // included) would be resolved in whatever directory each process is in when it starts.
  // A process started by PROGRAM inherits the variables: INPROF_ROOT_PID tells it apart, so that
  // it writes a dump of its own (or, with --no-children, none).
  command.variables["INPROF_ROOT_PID"] = std::to_string(pid);
  if (!command.children) command.variables["INPROF_CHILDREN"] = "0";
  std::string output;
  std::string output_named;
  if (auto it = command.variables.find("INPROF_OUTPUT"); it != command.variables.end()) {
    output = it->second;
    output_named = *output_typed;
  } else if (const char* v = inherited("INPROF_OUTPUT"); v && *v) {
    output = v;
    output_named = std::string("INPROF_OUTPUT='") + v + "' (from the environment)";
  } else if (command.children) {
    // One directory for the run, a dump per process in it: `symbolicate DIR` merges them.
    std::string directory = "inprof-" + std::to_string(pid);
    if (auto why = resolve_output_path(&directory, pid)) {
      *error = "the default output directory " + directory + " (give -o PATH): " + *why;
      return std::nullopt;
    }
    command.run_directory = directory;
    command.output = directory + "/%p.inprof";
    command.variables["INPROF_OUTPUT"] = command.output;
  } else {
    output = "inprof-%p.inprof";
    output_named = "the default output inprof-%p.inprof (give -o PATH)";
  }
  if (command.run_directory.empty()) {
    if (auto why = resolve_output_path(&output, pid)) {
      *error = output_named + ": " + *why;
      return std::nullopt;
    }
    command.output = output;
    command.variables["INPROF_OUTPUT"] = output;
  }

  // Last, everything the library will see, ours over what the program inherits: a bad value the
  // environment holds fails here, named by its variable, instead of in the program's stderr.
  std::string env_error;
  const auto seen = [&](const char* name) -> const char* {
    auto it = command.variables.find(name);
    return it != command.variables.end() ? it->second.c_str() : inherited(name);
  };
  if (!internal::parse_env(seen, &env_error)) {
    *error = "in the environment: " + env_error;
    return std::nullopt;
  }
  return command;
}

}  // namespace inprof::launcher
