#include "env_options.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "process_info.h"

namespace inprof::internal {
namespace {

struct Variable {
  const char* name;
  const char* meaning;
  const char* example;
};

constexpr Variable kVariables[] = {
    {"INPROF_STARTUP", "1: start profiling when the library loads, stop at exit", "1"},
    {"INPROF_OUTPUT", "dump path; %p becomes the process id (default inprof-%p.inprof)",
     "/tmp/app-%p.inprof"},
    {"INPROF_INTERVAL", "sampling interval, with unit ns, us, ms or s (default 1ms)", "500us"},
    {"INPROF_DURATION", "stop after this long (unit as above; default: at exit)", "30s"},
    {"INPROF_THREADS", "sample only threads whose name contains one of these (comma-separated)",
     "worker,io"},
    {"INPROF_BUFFER_SIZE", "buffer between sampler and writer, with unit K, M or G (default 8M)",
     "64M"},
    {"INPROF_STACK_COPY_SIZE", "stack bytes copied per sample (default 64K)", "128K"},
    {"INPROF_UNWINDER", "auto, dwarf or fp (default auto)", "fp"},
    {"INPROF_SIGNAL", "signal used to interrupt threads (default SIGURG)", "SIGRTMIN+3"},
    {"INPROF_SELF_SAMPLING",
     "how busy threads are sampled: auto (by the kernel's perf events where it allows them, "
     "else by CPU-time timers' signals) or timer (default auto)",
     "timer"},
    {"INPROF_SIGNAL_DUMP", "on this signal, stop and write the dump (the program goes on)",
     "SIGUSR2"},
    {"INPROF_MODE",
     "stream (write as it runs) or ring (flight recorder: keep the last records "
     "in memory, write them on a capture or at exit; default stream)",
     "ring"},
    {"INPROF_RING_SECONDS", "ring mode: captures hold at most the last this-many seconds", "30"},
    {"INPROF_SIGNAL_CAPTURE", "ring mode: on this signal, write the ring to OUTPUT-capture-N",
     "SIGUSR1"},
    {"INPROF_CRASH", "ring mode: 1 (or a path) writes the ring on a crash (default OUTPUT-crash)",
     "1"},
    {"INPROF_HELP", "1: print this table to stderr", "1"},
};

bool parse_duration(const std::string& text, std::chrono::nanoseconds* out) {
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || errno != 0 || value < 0) return false;
  const std::string unit(end);
  double scale;
  if (unit == "ns")
    scale = 1;
  else if (unit == "us" || unit == "µs")
    scale = 1e3;
  else if (unit == "ms" || unit.empty())
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  else
    return false;
  *out = std::chrono::nanoseconds(static_cast<int64_t>(value * scale));
  return true;
}

bool parse_size(const std::string& text, size_t* out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || errno != 0) return false;
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
  *out = static_cast<size_t>(value) << shift;
  return true;
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

std::optional<EnvConfig> parse_env(const std::function<const char*(const char*)>& getenv,
                                   std::string* error) {
  EnvConfig config;
  auto get = [&](const char* name) -> std::optional<std::string> {
    const char* v = getenv(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
  auto fail = [&](const char* name, const std::string& value, const char* expected) {
    *error = std::string(name) + "='" + value + "': expected " + expected;
    return std::nullopt;
  };
  if (auto v = get("INPROF_STARTUP")) config.startup = *v != "0";
  if (auto v = get("INPROF_HELP")) config.help = *v != "0";
  config.options.output_path =
      expand_output_path(get("INPROF_OUTPUT").value_or("inprof-%p.inprof"), process_id());
  if (auto v = get("INPROF_INTERVAL")) {
    if (!parse_duration(*v, &config.options.interval)) {
      return fail("INPROF_INTERVAL", *v, "a duration such as 1ms or 500us");
    }
  }
  if (auto v = get("INPROF_DURATION")) {
    std::chrono::nanoseconds d;
    if (!parse_duration(*v, &d) || d.count() == 0) {
      return fail("INPROF_DURATION", *v, "a duration such as 30s");
    }
    config.duration = d;
  }
  if (auto v = get("INPROF_THREADS")) {
    std::stringstream ss(*v);
    std::string part;
    while (std::getline(ss, part, ',')) {
      if (!part.empty()) config.options.thread_filters.push_back(part);
    }
  }
  if (auto v = get("INPROF_BUFFER_SIZE")) {
    if (!parse_size(*v, &config.options.buffer_size)) {
      return fail("INPROF_BUFFER_SIZE", *v, "a size such as 64M");
    }
  }
  if (auto v = get("INPROF_STACK_COPY_SIZE")) {
    if (!parse_size(*v, &config.options.stack_copy_size)) {
      return fail("INPROF_STACK_COPY_SIZE", *v, "a size such as 64K");
    }
  }
  if (auto v = get("INPROF_UNWINDER")) {
    if (*v == "auto")
      config.options.unwinder = UnwindMethod::kAuto;
    else if (*v == "dwarf")
      config.options.unwinder = UnwindMethod::kDwarf;
    else if (*v == "fp" || *v == "frame-pointer")
      config.options.unwinder = UnwindMethod::kFramePointer;
    else
      return fail("INPROF_UNWINDER", *v, "auto, dwarf or fp");
  }
  if (auto v = get("INPROF_SELF_SAMPLING")) {  // read by the platform's stack copier
    if (*v != "auto" && *v != "timer") return fail("INPROF_SELF_SAMPLING", *v, "auto or timer");
  }
  if (auto v = get("INPROF_SIGNAL")) {
    config.options.sample_signal = parse_signal(*v);
    if (config.options.sample_signal == 0) return fail("INPROF_SIGNAL", *v, "a signal");
  }
  if (auto v = get("INPROF_MODE")) {
    if (*v == "stream")
      config.options.mode = Mode::kStream;
    else if (*v == "ring")
      config.options.mode = Mode::kRing;
    else
      return fail("INPROF_MODE", *v, "stream or ring");
  }
  if (auto v = get("INPROF_RING_SECONDS")) {
    char* end = nullptr;
    const long long seconds = std::strtoll(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || seconds <= 0) {
      return fail("INPROF_RING_SECONDS", *v, "a whole number of seconds such as 30");
    }
    config.options.ring_seconds = std::chrono::seconds(seconds);
  }
  if (auto v = get("INPROF_SIGNAL_CAPTURE")) {
    config.options.capture_signal = parse_signal(*v);
    if (config.options.capture_signal == 0) return fail("INPROF_SIGNAL_CAPTURE", *v, "a signal");
  }
  if (auto v = get("INPROF_CRASH")) {
    if (*v == "1") {
      config.options.crash_capture = true;
    } else if (*v != "0" && !v->empty()) {
      config.options.crash_capture = true;
      config.options.crash_path = expand_output_path(*v, process_id());
    }
  }
  if (auto v = get("INPROF_SIGNAL_DUMP")) {
    config.dump_signal = parse_signal(*v);
    if (config.dump_signal == 0) return fail("INPROF_SIGNAL_DUMP", *v, "a signal");
  }
  return config;
}

std::string env_help() {
  std::string text =
      "inprof: profiling without code changes. Preload the library and set:\n"
      "  LD_PRELOAD=/path/to/libinprof.so INPROF_STARTUP=1 ./program\n\n";
  for (const Variable& v : kVariables) {
    const std::string name = v.name;
    text += "  " + name + std::string(name.size() < 24 ? 24 - name.size() : 1, ' ');
    text += v.meaning;
    text += " (e.g. ";
    text += v.example;
    text += ")\n";
  }
  return text;
}

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
