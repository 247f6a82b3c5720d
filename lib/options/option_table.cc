#include "options/option_table.h"

#include <chrono>

#include "inprof/profiler.h"
#include "options/option_limits.h"

namespace inprof::internal {

std::string describe_duration(std::chrono::nanoseconds d) {
  const int64_t ns = d.count();
  if (ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + "s";
  if (ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + "ms";
  if (ns % 1'000 == 0) return std::to_string(ns / 1'000) + "us";
  return std::to_string(ns) + "ns";
}

std::string describe_bytes(size_t bytes) {
  if (bytes != 0 && bytes % (size_t{1} << 30) == 0) return std::to_string(bytes >> 30) + "G";
  if (bytes != 0 && bytes % (size_t{1} << 20) == 0) return std::to_string(bytes >> 20) + "M";
  if (bytes != 0 && bytes % (size_t{1} << 10) == 0) return std::to_string(bytes >> 10) + "K";
  return std::to_string(bytes);
}

namespace {

const Options kDefaults{};

// The allocations row's meaning says "512K" in words.
static_assert(kDefaultAllocationSampleBytes == size_t{512} << 10);

template <typename T>
std::string between(T low, T high, std::string (*show)(T)) {
  return show(low) + " to " + show(high);
}

const OptionSpec kOptions[] = {
    {"INPROF_STARTUP", nullptr, nullptr, nullptr,
     "1: start profiling when the library loads, stop at exit (`inprof record` sets it)", "1",
     nullptr, nullptr},
    {"INPROF_OUTPUT", "-o, --output", "output_path", "output_path",
     "the dump; `%p` becomes the process id (created 0600; a symlink there is refused; a path "
     "another live process is writing is never shared: this one writes `PATH-PID` and says so)",
     "/tmp/app-%p.inprof", +[] { return std::string("inprof-%p.inprof"); }, nullptr, true},
    {"INPROF_INTERVAL", "-i, --interval", "interval", "interval_ns",
     "time between two samples of each thread; a unit is required (ns, us, ms or s)", "500us",
     +[] { return describe_duration(kDefaults.interval); },
     +[] { return between(kMinInterval, kMaxInterval, &describe_duration); }, true},
    {"INPROF_DURATION", "-d, --duration", nullptr, nullptr,
     "stop after this long (a unit is required)", "30s", +[] { return std::string("at exit"); },
     nullptr, true},
    {"INPROF_THREADS", "-t, --threads", "thread_filters", "thread_filters",
     "sample only threads whose name contains one of these (comma-separated)", "worker,io",
     +[] { return std::string("all"); }, nullptr, true},
    {"INPROF_BUFFER_SIZE", nullptr, "buffer_size", "buffer_size",
     "memory between the sampler and the writer thread (unit K, M or G); if the writer falls "
     "behind, samples and markers are dropped and counted, never corrupted",
     "64M", +[] { return describe_bytes(kDefaults.buffer_size); },
     +[] { return between(kMinBufferSize, kMaxBufferSize, &describe_bytes); }},
    {"INPROF_STACK_COPY_SIZE", nullptr, "stack_copy_size", "stack_copy_size",
     "at most this many stack bytes copied per sample (only the stack there is); deeper stacks "
     "are marked truncated",
     "1M", +[] { return describe_bytes(kDefaults.stack_copy_size); },
     +[] { return between(kMinStackCopySize, kMaxStackCopySize, &describe_bytes); }},
    {"INPROF_MAX_FRAMES", nullptr, "max_frames", "max_frames", "frames kept per sample", "512",
     +[] { return std::to_string(kDefaults.max_frames); },
     +[] { return std::to_string(kMinMaxFrames) + " to " + std::to_string(kMaxMaxFrames); }},
    {"INPROF_UNWINDER", "-u, --unwinder", "unwinder", "unwinder",
     "`auto`: DWARF CFI where a module has it, frame pointers elsewhere (JIT code); `dwarf`; "
     "`fp` (C: 0, 1, 2; C++: `UnwindMethod::kAuto`, `kDwarf`, `kFramePointer`)",
     "fp", +[] { return std::string("auto"); }, nullptr, true},
    {"INPROF_SIGNAL", nullptr, "sample_signal", "sample_signal",
     "the signal that interrupts threads where timers sample; `start()` refuses one the "
     "program already handles",
     "SIGRTMIN+3", +[] { return std::string("SIGURG (0 in code)"); }, nullptr},
    {"INPROF_SELF_SAMPLING", nullptr, nullptr, nullptr,
     "how running threads are sampled: `auto` (the kernel's perf events where it allows them, "
     "else CPU-time timers' signals) or `timer`",
     "timer", +[] { return std::string("auto"); }, nullptr},
    {nullptr, nullptr, "thread_answer_timeout", nullptr,
     "a thread that does not answer (signals blocked) is skipped, counted, and retried with "
     "back-off",
     nullptr, +[] { return describe_duration(kDefaults.thread_answer_timeout); },
     +[] { return std::string("100us to 1s"); }},
    {"INPROF_SIGNAL_DUMP", "--dump-signal", nullptr, nullptr,
     "on this signal, stop profiling and write the dump (the program goes on)", "SIGUSR2", nullptr,
     nullptr, true},
    {"INPROF_MODE", "--ring", "mode", "mode",
     "`stream`: a writer thread streams everything to the dump; `ring`: the flight recorder, "
     "which keeps the last records in memory and writes them on a capture or at exit (C: 0, 1)",
     "ring", +[] { return std::string(kDefaults.mode == Mode::kRing ? "ring" : "stream"); },
     nullptr},
    {"INPROF_RING_SECONDS", "--ring-seconds", "ring_seconds", "ring_seconds",
     "ring mode: captures hold at most the last this-many seconds (0: all the ring holds)", "30",
     +[] { return std::to_string(kDefaults.ring_seconds.count()); }, nullptr, true},
    {"INPROF_SIGNAL_CAPTURE", "--capture-signal", "capture_signal", "capture_signal",
     "ring mode: on this signal, write the ring to `OUTPUT-capture-N`", "SIGUSR1",
     +[] { return std::string("none"); }, nullptr, true},
    {"INPROF_CRASH", "--crash", "crash_capture, crash_path", "crash_capture, crash_path",
     "ring mode: `1` (or a path) writes the ring on a fatal signal, to `OUTPUT-crash` unless a "
     "path is given",
     "1", +[] { return std::string("off"); }, nullptr},
    {"INPROF_ROTATE", "--rotate", "rotate_interval", "rotate_interval_ns",
     "stream mode: close the dump every this long and open the next, each complete on its own "
     "(`OUTPUT` may hold `%n`, the window's number, and `%t`, its start; else `-%n` goes before "
     "the extension)",
     "60s", +[] { return std::string("0 (one dump)"); },
     +[] { return std::string("100ms to a year"); }, true},
    {"INPROF_KEEP_FILES", "--keep", "keep_files", "keep_files",
     "with rotation: keep only the newest this-many window dumps", "120",
     +[] { return std::string("0 (all)"); }, nullptr, true},
    {"INPROF_ROOT_PID", nullptr, nullptr, nullptr,
     "set by `inprof record`: the process it started; the others (its descendants) write "
     "`OUTPUT-PID` unless `OUTPUT` has `%p`",
     "1234", nullptr, nullptr},
    {"INPROF_LIFEBOAT", nullptr, nullptr, nullptr,
     "set by `inprof record`: where a process that ends without stopping the profiler (`_exit`, "
     "a signal) leaves the records it had not yet written, for the launcher to finish its dump",
     "inprof-lifeboat-1234", nullptr, nullptr},
    {"INPROF_PULL", nullptr, nullptr, nullptr,
     "pull mode: serve `/debug/pprof/` (`go tool pprof`, Parca, Grafana Alloy scrapes) on this "
     "loopback address or UNIX socket (docs/fleet.md); a scrape samples for its window alone, "
     "or reads the session `INPROF_STARTUP` runs (which then writes no dump unless `OUTPUT` is "
     "given); with the allocation interposer in the process such a session starts anyway, "
     "recording allocations, for the heap. `%p` in a UNIX socket's path "
     "is the process id (child processes inherit the variable)",
     "127.0.0.1:6060", +[] { return std::string("off"); }, nullptr},
    {"INPROF_PULL_MAX_SECONDS", nullptr, nullptr, nullptr,
     "pull mode: the longest profile a scrape may ask for (`?seconds=`)", "60",
     +[] { return std::string("300"); }, +[] { return "1 to " + std::to_string(kMaxPullSeconds); }},
    {"INPROF_PULL_SYMBOLS", nullptr, nullptr, nullptr,
     "pull mode: `0`: `/debug/pprof/symbol` names no address (else it names them from the "
     "dynamic symbol tables the process has mapped, for `go tool pprof`)",
     "0", +[] { return std::string("1"); }, nullptr},
    {"INPROF_CHILDREN", "--no-children", nullptr, nullptr,
     "with `INPROF_ROOT_PID`, `0`: profile that process alone", "0",
     +[] { return std::string("1"); }, nullptr},
    {"INPROF_ALLOCATIONS", "--allocations[=BYTES]", "allocation_sample_bytes", nullptr,
     "sampled native allocations: the mean bytes allocated between two recorded ones (`on`: "
     "512K; `1`: every allocation); needs the interposer in the process "
     "(`libinprof_allocations.so` preloaded, or `inprof::allocations` linked)",
     "512K", +[] { return std::string("off"); },
     +[] { return std::string("1 to ") + describe_bytes(kMaxAllocationSampleBytes); }},
    {"INPROF_CPU", "--no-cpu", "cpu_samples", nullptr,
     "`0`: no CPU samples (with allocations, a memory-only profile; markers and counters are "
     "still recorded); no thread is interrupted and no signal handler installed",
     "0", +[] { return std::string(kDefaults.cpu_samples ? "1" : "0"); }, nullptr},
    {"INPROF_HELP", nullptr, nullptr, nullptr,
     "1: print this table to stderr (also without `INPROF_STARTUP`)", "1", nullptr, nullptr},
};

std::string code(const char* text) { return text ? std::string("`") + text + "`" : ""; }

}  // namespace

std::span<const OptionSpec> option_table() { return kOptions; }

std::string variables_markdown() {
  std::string out =
      "| variable | `inprof record` | meaning | default | example |\n"
      "|---|---|---|---|---|\n";
  for (const OptionSpec& o : kOptions) {
    if (!o.variable) continue;
    std::string meaning = o.meaning;
    if (o.range) meaning += "; " + o.range();
    out += "| " + code(o.variable) + " | " + code(o.flag) + " | " + meaning + " | " +
           (o.default_value ? code(o.default_value().c_str()) : "") + " | " + code(o.example) +
           " |\n";
  }
  return out;
}

std::string fields_markdown() {
  std::string out =
      "| `Options` field | C `inprof_options` | default | range | meaning |\n"
      "|---|---|---|---|---|\n";
  for (const OptionSpec& o : kOptions) {
    if (!o.field) continue;
    std::string meaning = o.meaning;
    if (o.variable) meaning += " (" + code(o.variable) + ")";
    out += "| " + code(o.field) + " | " + (o.c_field ? code(o.c_field) : "—") + " | " +
           (o.default_value ? o.default_value() : "") + " | " + (o.range ? o.range() : "") + " | " +
           meaning + " |\n";
  }
  return out;
}

std::string options_help() {
  std::string text =
      "inprof: profiling without code changes. Preload the library and set:\n"
      "  LD_PRELOAD=/path/to/libinprof.so INPROF_STARTUP=1 ./program\n"
      "or run `inprof record [options] ./program` (its flags below, beside the variables).\n\n";
  for (const OptionSpec& o : kOptions) {
    if (!o.variable) continue;
    const std::string name = o.variable;
    text += "  " + name + std::string(name.size() < 24 ? 24 - name.size() : 1, ' ');
    std::string meaning = o.meaning;
    for (char& c : meaning) {
      if (c == '`') c = '\'';
    }
    text += meaning;
    if (o.range) text += "; " + o.range();
    if (o.default_value) text += " (default " + o.default_value() + ")";
    if (o.flag) text += std::string(" [inprof record ") + o.flag + "]";
    text += " (e.g. " + std::string(o.example) + ")\n";
  }
  return text;
}

}  // namespace inprof::internal
