#include "options/env_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <utility>
#include <vector>

#include "options/option_limits.h"
#include "options/option_table.h"
#include "session/output_file.h"
#include "session/process_info.h"

namespace inprof::internal {
namespace {

// A duration always carries its unit: a bare "5" once meant 5 ms, which nobody guessed (`-d 5`
// stopped after 5 ms). `bare_hint` suggests the likely units for a bare number.
std::optional<std::string> parse_duration(const std::string& text, const char* example,
                                          std::pair<const char*, const char*> bare_hint,
                                          std::chrono::nanoseconds* out) {
  const std::string expected =
      std::string("expected a duration such as ") + example + " (unit ns, us, ms or s)";
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || errno != 0 || !std::isfinite(value) || value < 0) return expected;
  const std::string unit(end);
  double scale;
  if (unit.empty())
    return "give a unit: " + text + bare_hint.first + ", " + text + bare_hint.second;
  else if (unit == "ns")
    scale = 1;
  else if (unit == "us" || unit == "µs")
    scale = 1e3;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  else
    return expected;
  const double ns = value * scale;
  // A century is more than anyone means, and far from int64's ~292 years of nanoseconds.
  if (ns > 100.0 * 365 * 24 * 3600 * 1e9) return "that is more than a century";
  *out = std::chrono::nanoseconds(static_cast<int64_t>(ns));
  return std::nullopt;
}

bool parse_size(const std::string& text, size_t* out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || errno != 0 || text[0] == '-') return false;
  std::string unit(end);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  if (unit.size() == 2 && unit[1] == 'i') unit.pop_back();  // KiB, MiB, GiB
  unsigned shift;
  if (unit.empty())
    shift = 0;
  else if (unit == "K" || unit == "k")
    shift = 10;
  else if (unit == "M" || unit == "m")
    shift = 20;
  else if (unit == "G" || unit == "g")
    shift = 30;
  else
    return false;
  if (value > (~0ull >> shift)) return false;
  *out = static_cast<size_t>(value) << shift;
  return true;
}

std::optional<std::string> parse_size_in(const std::string& text, const char* example, size_t min,
                                         size_t max, size_t* out) {
  size_t size;
  if (!parse_size(text, &size)) {
    return std::string("expected a size such as ") + example + " (unit K, M or G)";
  }
  if (size < min || size > max)
    return "must be from " + describe_bytes(min) + " to " + describe_bytes(max);
  *out = size;
  return std::nullopt;
}

std::optional<std::string> parse_signal_into(const std::string& text, int* out) {
  const int signal = parse_signal(text);
  if (signal == 0) return "expected a signal such as SIGUSR2";
  *out = signal;
  return std::nullopt;
}

// Ring-mode settings are refused without ring mode (as Profiler::start() refuses them), named as
// the user wrote them.
std::optional<std::string> check_ring_settings(
    const std::function<std::optional<std::string>(const char*)>& get, const EnvConfig& config) {
  if (config.options.mode == Mode::kRing) return std::nullopt;
  for (const char* name : {"INPROF_RING_SECONDS", "INPROF_SIGNAL_CAPTURE", "INPROF_CRASH"}) {
    if (auto v = get(name); v && *v != "0") {
      return std::string(name) + "='" + *v + "' is for ring mode: set INPROF_MODE=ring too";
    }
  }
  return std::nullopt;
}

}  // namespace

int parse_signal(const std::string& text) {
  if (text.empty()) return 0;
  char* end = nullptr;
  const long number = std::strtol(text.c_str(), &end, 10);
  if (*end == '\0') return number > 0 && number < 65 ? static_cast<int>(number) : 0;
  std::string name = text.rfind("SIG", 0) == 0 ? text.substr(3) : text;
  return signal_number(name);
}

std::optional<std::string> apply_env_variable(const std::string& name, const std::string& value,
                                              EnvConfig* config) {
  Options& o = config->options;
  if (name == "INPROF_STARTUP") {
    config->startup = value != "0";
  } else if (name == "INPROF_ROOT_PID") {
    char* end = nullptr;
    const unsigned long long pid = std::strtoull(value.c_str(), &end, 10);
    if (*end != '\0' || pid == 0 || value[0] == '-') return "expected a process id";
    config->root_pid = pid;
  } else if (name == "INPROF_LIFEBOAT") {
    if (value.size() > 100) return "expected a name of at most 100 characters";
    config->lifeboat = value;
  } else if (name == "INPROF_PULL") {
    if (value.size() > 200) return "expected HOST:PORT or unix:PATH";
    config->pull = expand_output_path(value, process_id());
  } else if (name == "INPROF_PULL_MAX_SECONDS") {
    char* end = nullptr;
    const unsigned long long seconds = std::strtoull(value.c_str(), &end, 10);
    if (*end != '\0' || value[0] == '-' || seconds < 1 || seconds > kMaxPullSeconds) {
      return "expected whole seconds from 1 to " + std::to_string(kMaxPullSeconds);
    }
    config->pull_max_seconds = seconds;
  } else if (name == "INPROF_PULL_SYMBOLS") {
    if (value != "0" && value != "1") return "expected 0 or 1";
    config->pull_symbols = value == "1";
  } else if (name == "INPROF_CHILDREN") {
    if (value != "0" && value != "1") return "expected 0 or 1";
    config->children = value == "1";
  } else if (name == "INPROF_HELP") {
    config->help = value != "0";
  } else if (name == "INPROF_OUTPUT") {
    o.output_path = expand_output_path(value, process_id());
    config->output_given = true;
  } else if (name == "INPROF_INTERVAL") {
    std::chrono::nanoseconds interval;
    if (auto why = parse_duration(value, "1ms or 500us", {"ms", "us"}, &interval)) return why;
    if (interval < kMinInterval || interval > kMaxInterval) {
      return "must be from " + describe_duration(kMinInterval) + " to " +
             describe_duration(kMaxInterval);
    }
    o.interval = interval;
  } else if (name == "INPROF_DURATION") {
    std::chrono::nanoseconds duration;
    if (auto why = parse_duration(value, "30s", {"s", "ms"}, &duration)) return why;
    if (duration.count() == 0) return "must be more than 0";
    config->duration = duration;
  } else if (name == "INPROF_THREADS") {
    std::vector<std::string> filters;
    std::stringstream ss(value);
    std::string part;
    while (std::getline(ss, part, ',')) {
      if (!part.empty()) filters.push_back(part);
    }
    if (filters.empty()) return "expected thread names, comma-separated, such as worker,io";
    o.thread_filters = std::move(filters);
  } else if (name == "INPROF_BUFFER_SIZE") {
    return parse_size_in(value, "64M", kMinBufferSize, kMaxBufferSize, &o.buffer_size);
  } else if (name == "INPROF_STACK_COPY_SIZE") {
    return parse_size_in(value, "128K", kMinStackCopySize, kMaxStackCopySize, &o.stack_copy_size);
  } else if (name == "INPROF_MAX_FRAMES") {
    char* end = nullptr;
    errno = 0;
    const unsigned long long frames = std::strtoull(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || errno != 0 || value[0] == '-') {
      return "expected a number of frames such as 4096";
    }
    if (frames < kMinMaxFrames || frames > kMaxMaxFrames) {
      return "must be from " + std::to_string(kMinMaxFrames) + " to " +
             std::to_string(kMaxMaxFrames);
    }
    o.max_frames = static_cast<size_t>(frames);
  } else if (name == "INPROF_ALLOCATIONS") {
    if (value == "on") {
      o.allocation_sample_bytes = kDefaultAllocationSampleBytes;
      return std::nullopt;
    }
    if (value == "off" || value == "0") {
      o.allocation_sample_bytes = 0;
      return std::nullopt;
    }
    return parse_size_in(value, "512K", 1, kMaxAllocationSampleBytes, &o.allocation_sample_bytes);
  } else if (name == "INPROF_CPU") {
    if (value != "0" && value != "1") return "expected 0 or 1";
    o.cpu_samples = value == "1";
  } else if (name == "INPROF_UNWINDER") {
    if (value == "auto")
      o.unwinder = UnwindMethod::kAuto;
    else if (value == "dwarf")
      o.unwinder = UnwindMethod::kDwarf;
    else if (value == "fp" || value == "frame-pointer")
      o.unwinder = UnwindMethod::kFramePointer;
    else
      return "expected auto, dwarf or fp";
  } else if (name == "INPROF_SIGNAL") {
    return parse_signal_into(value, &o.sample_signal);
  } else if (name == "INPROF_SELF_SAMPLING") {  // read by the platform's stack copier
    if (value != "auto" && value != "timer") return "expected auto or timer";
  } else if (name == "INPROF_MODE") {
    if (value == "stream")
      o.mode = Mode::kStream;
    else if (value == "ring")
      o.mode = Mode::kRing;
    else
      return "expected stream or ring";
  } else if (name == "INPROF_RING_SECONDS") {
    char* end = nullptr;
    errno = 0;
    const long long seconds = std::strtoll(value.c_str(), &end, 10);
    if (*end != '\0' || errno != 0 || seconds <= 0) {
      return "expected a whole number of seconds such as 30";
    }
    if (std::chrono::seconds(seconds) > kMaxRingSeconds) return "must be at most a year";
    o.ring_seconds = std::chrono::seconds(seconds);
  } else if (name == "INPROF_ROTATE") {
    std::chrono::nanoseconds interval;
    if (auto why = parse_duration(value, "60s", {"s", "ms"}, &interval)) return why;
    if (interval < std::chrono::milliseconds(100) ||
        interval > std::chrono::duration_cast<std::chrono::nanoseconds>(kMaxRingSeconds)) {
      return "must be from 100ms to a year";
    }
    o.rotate_interval = interval;
  } else if (name == "INPROF_KEEP_FILES") {
    char* end = nullptr;
    errno = 0;
    const long long count = std::strtoll(value.c_str(), &end, 10);
    if (*end != '\0' || errno != 0 || count < 0 || count > 1000000) {
      return "expected a number of files such as 60 (0: keep all)";
    }
    o.keep_files = static_cast<size_t>(count);
  } else if (name == "INPROF_SIGNAL_CAPTURE") {
    return parse_signal_into(value, &o.capture_signal);
  } else if (name == "INPROF_CRASH") {
    if (value == "1") {
      o.crash_capture = true;
    } else if (value != "0") {
      o.crash_capture = true;
      o.crash_path = expand_output_path(value, process_id());
    }
  } else if (name == "INPROF_SIGNAL_DUMP") {
    return parse_signal_into(value, &config->dump_signal);
  }
  return std::nullopt;
}

std::optional<EnvConfig> parse_env(const std::function<const char*(const char*)>& getenv,
                                   std::string* error) {
  EnvConfig config;
  auto get = [&](const char* name) -> std::optional<std::string> {
    const char* v = getenv(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
  config.options.output_path = expand_output_path("inprof-%p.inprof", process_id());
  for (const OptionSpec& option : option_table()) {
    if (!option.variable) continue;
    const auto value = get(option.variable);
    if (!value) continue;
    if (auto why = apply_env_variable(option.variable, *value, &config)) {
      *error = std::string(option.variable) + "='" + *value + "': " + *why;
      return std::nullopt;
    }
  }
  if (auto why = check_ring_settings(get, config)) {
    *error = *why;
    return std::nullopt;
  }
  // A descendant of the process `inprof record` started: profiled into a dump of its own, or not
  // at all.
  if (config.root_pid && *config.root_pid != process_id()) {
    if (!config.children) {
      config.startup = false;
    } else if (const auto output = get("INPROF_OUTPUT");
               output && output->find("%p") == std::string::npos) {
      config.options.output_path =
          OutputFile::pid_suffixed_path(config.options.output_path, process_id());
    }
  }
  return config;
}

std::string env_help() { return options_help(); }

std::string expand_output_path(const std::string& pattern, uint64_t pid) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'p') {
      out += std::to_string(pid);
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

}  // namespace inprof::internal
