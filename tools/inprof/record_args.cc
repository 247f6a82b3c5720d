#include "record_args.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "options/env_options.h"
#include "options/option_table.h"
#include "output_path.h"

namespace inprof::launcher {
namespace {

struct ValueFlag {
  std::string short_name;  // may be empty
  std::string long_name;
  const char* variable;
  bool ring;  // a flight-recorder setting: implies --ring
};

// The flags that take a value, from the table of options (option_table.h): "-o, --output".
const std::vector<ValueFlag>& value_flags() {
  static const std::vector<ValueFlag> flags = [] {
    std::vector<ValueFlag> out;
    for (const internal::OptionSpec& o : internal::option_table()) {
      if (!o.flag || !o.variable || !o.flag_takes_value) continue;
      const std::string text = o.flag;
      const size_t comma = text.find(", ");
      ValueFlag f;
      f.short_name = comma == std::string::npos ? "" : text.substr(0, comma);
      f.long_name = comma == std::string::npos ? text : text.substr(comma + 2);
      f.variable = o.variable;
      f.ring = std::strcmp(o.variable, "INPROF_RING_SECONDS") == 0 ||
               std::strcmp(o.variable, "INPROF_SIGNAL_CAPTURE") == 0;
      out.push_back(f);
    }
    return out;
  }();
  return flags;
}

const ValueFlag* find_flag(const std::string& name) {
  for (const ValueFlag& f : value_flags()) {
    if ((!f.short_name.empty() && name == f.short_name) || name == f.long_name) return &f;
  }
  return nullptr;
}

// The flag and its value as the user typed them, for messages: "-i fast", "--interval=fast".
std::string as_typed(const std::string& flag, const std::string& value, bool joined) {
  const std::string shown = value.empty() ? "''" : value;
  return joined ? flag + "=" + shown : flag + " " + shown;
}

bool ends_with(const std::string& text, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return text.size() > n && text.compare(text.size() - n, n, suffix) == 0;
}

// A name the Firefox Profiler loads, or one of inprof's raw dumps.
bool is_profile_name(const std::string& path) {
  return ends_with(path, ".json") || ends_with(path, ".json.gz");
}
bool is_dump_name(const std::string& path) {
  return ends_with(path, ".inprof") || path.find("%p") != std::string::npos;
}

bool is_set(const char* value) { return value != nullptr && *value != '\0'; }

// The setting that makes the output raw dumps (a window per dump, captures on demand), or null.
const char* raw_only_setting(const std::function<const char*(const char*)>& seen) {
  const char* mode = seen("INPROF_MODE");
  if (mode && std::strcmp(mode, "ring") == 0) return "INPROF_MODE";
  if (is_set(seen("INPROF_ROTATE"))) return "INPROF_ROTATE";
  return nullptr;
}

// Settings each valid alone that do not go together, in the user's terms; nothing if none.
std::optional<std::string> conflicting_settings(
    const std::function<const char*(const char*)>& seen,
    const std::function<std::string(const char*)>& named) {
  const char* mode = seen("INPROF_MODE");
  const bool ring = mode && std::strcmp(mode, "ring") == 0;
  const bool rotate = is_set(seen("INPROF_ROTATE"));
  if (is_set(seen("INPROF_KEEP_FILES")) && !rotate) {
    return named("INPROF_KEEP_FILES") + " goes with --rotate (it keeps the newest windows)";
  }
  if (rotate && ring) {
    return named("INPROF_ROTATE") + " cannot go with " + named("INPROF_MODE") +
           ": a rotating profile is written as it goes, the flight recorder only on demand";
  }
  const char* cpu = seen("INPROF_CPU");
  if (cpu && std::strcmp(cpu, "0") == 0 && !is_set(seen("INPROF_ALLOCATIONS"))) {
    return named("INPROF_CPU") + " without --allocations records nothing";
  }
  return std::nullopt;
}

// A flag without a value (--raw, -q, --open, --ring, ...): applies it to `command` and returns
// true, or false when `arg` is not one.
bool take_switch(const std::string& arg, RecordCommand& command, bool& raw,
                 std::map<std::string, std::string>& typed_as) {
  if (arg == "--raw") {
    raw = true;
  } else if (arg == "-q" || arg == "--quiet") {
    command.quiet = true;
  } else if (arg == "--no-children") {
    command.children = false;
  } else if (arg == "--children") {
    command.children = true;
  } else if (arg == "--open") {
    command.open = true;
  } else if (arg == "--no-browser") {
    command.open_browser = false;
  } else if (arg == "--ring") {
    command.variables["INPROF_MODE"] = "ring";
    typed_as["INPROF_MODE"] = arg;
  } else if (arg == "--no-cpu") {
    command.variables["INPROF_CPU"] = "0";
    typed_as["INPROF_CPU"] = arg;
  } else if (arg == "--crash") {
    command.variables["INPROF_MODE"] = "ring";
    command.variables["INPROF_CRASH"] = "1";
    typed_as["INPROF_MODE"] = arg;
  } else {
    return false;
  }
  return true;
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
  bool raw = false;                             // --raw
  std::map<std::string, std::string> typed_as;  // variable -> the flag that set it, as typed
  size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) {
    const std::string& arg = args[i];
    if (arg.empty() || arg[0] != '-') break;  // PROGRAM, as `samply record ls` or `perf record ls`
    if (arg == "-h" || arg == "--help") {
      command.help = true;
      return command;
    }
    if (take_switch(arg, command, raw, typed_as)) continue;
    if (arg == "--port" || arg.rfind("--port=", 0) == 0) {
      std::string value;
      if (arg.size() > 7) {
        value = arg.substr(7);
      } else if (i + 1 < args.size()) {
        value = args[++i];
      }
      char* end = nullptr;
      const long port = value.empty() ? 0 : std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || port < 1 || port > 65535) {
        *error = as_typed("--port", value, arg.size() > 7) + ": expected a port, 1 to 65535";
        return std::nullopt;
      }
      command.port = value;
      continue;
    }
    if (arg == "--allocations" || arg.rfind("--allocations=", 0) == 0) {
      const std::string value = arg.size() > 14 ? arg.substr(14) : "on";
      if (auto why = internal::apply_env_variable("INPROF_ALLOCATIONS", value, &scratch)) {
        *error = arg + ": " + *why;
        return std::nullopt;
      }
      command.variables["INPROF_ALLOCATIONS"] = value;
      typed_as["INPROF_ALLOCATIONS"] = arg;
      continue;
    }
    const size_t equals = arg.rfind("--", 0) == 0 ? arg.find('=') : std::string::npos;
    const std::string name = arg.substr(0, equals);
    const ValueFlag* flag = find_flag(name);
    if (!flag) {
      *error = "unknown option '" + arg + "' (inprof record --help lists them)";
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
    if (flag->ring) {
      command.variables["INPROF_MODE"] = "ring";
      typed_as["INPROF_MODE"] = typed;
    }
    if (flag->variable == std::string("INPROF_OUTPUT")) output_typed = typed;
    command.variables[flag->variable] = value;
    typed_as[flag->variable] = typed;
  }
  if (i < args.size() && args[i] == "--") ++i;
  if (i >= args.size()) {
    *error = "missing program (inprof record [options] PROGRAM [ARGS...])";
    return std::nullopt;
  }
  command.program.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  const auto seen = [&](const char* name) -> const char* {
    auto it = command.variables.find(name);
    return it != command.variables.end() ? it->second.c_str() : inherited(name);
  };
  // Each setting as the user gave it: the flag as typed, else the variable from the environment.
  const auto named = [&](const char* name) {
    if (auto it = typed_as.find(name); it != typed_as.end()) return it->second;
    const char* value = inherited(name);
    return std::string(name) + "=" + (value ? value : "") + " (from the environment)";
  };
  if (auto why = conflicting_settings(seen, named)) {
    *error = *why;
    return std::nullopt;
  }

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
  }
  // Raw dumps where they are asked for, or where a profile at the end cannot stand for the run
  // (windows, captures); else the profile, symbolicated here when PROGRAM ends.
  const char* raw_flag = raw_only_setting(seen);
  std::error_code ec;
  if (!output.empty() && std::filesystem::is_directory(output, ec)) {
    *error = output_named + ": is a directory";
    return std::nullopt;
  }
  if (!output.empty() && is_profile_name(output)) {
    if (raw || raw_flag) {
      *error = output_named + ": " + (raw ? std::string("--raw") : named(raw_flag)) +
               " writes raw dumps: name them NAME.inprof";
      return std::nullopt;
    }
    command.profile = output;
    output.clear();
  } else if (!output.empty() && !raw && !raw_flag && !is_dump_name(output)) {
    *error = output_named + ": a profile is NAME.json or NAME.json.gz (raw dumps: NAME.inprof," +
             " or --raw)";
    return std::nullopt;
  } else if (output.empty() && !raw && !raw_flag) {
    command.profile = "profile.json.gz";  // samply's name
  }
  if (!command.profile.empty()) {
    if (auto why = resolve_output_path(&command.profile, pid)) {
      *error = (output_named.empty() ? "the profile profile.json.gz (give -o NAME.json.gz)"
                                     : output_named) +
               ": " + *why;
      return std::nullopt;
    }
    // The dumps, until symbolicate has read them: out of the program's sight (`inprof record ls`).
    const char* tmp = inherited("TMPDIR");
    std::string directory =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/inprof-" + std::to_string(pid);
    if (auto why = resolve_output_path(&directory, pid)) {
      *error = "the dumps' temporary directory " + directory + ": " + *why;
      return std::nullopt;
    }
    command.run_directory = directory;
    command.output = directory + "/%p.inprof";
    command.variables["INPROF_OUTPUT"] = command.output;
  } else if (output.empty() && command.children) {
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
    if (output.empty()) {
      output = "inprof-%p.inprof";
      output_named = "the default output inprof-%p.inprof (give -o PATH)";
    }
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
  if (!internal::parse_env(seen, &env_error)) {
    *error = "in the environment: " + env_error;
    return std::nullopt;
  }
  return command;
}

}  // namespace inprof::launcher
