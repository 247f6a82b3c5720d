// inprof: an embeddable in-process sampling profiler.
//
// A program links inprof and drives it:
//
//   #include <inprof/profiler.h>
//   inprof::Options opts;              // 1 ms interval, "inprof-<pid>.inprof" by default
//   opts.output_path = "app.inprof";
//   if (auto status = inprof::Profiler::start(opts); !status) {
//     fprintf(stderr, "profiler: %s\n", status.message().c_str());
//   }
//   ...
//   inprof::Profiler::stop();          // every sample taken is now in app.inprof
//
// or profiles a scope only (start-up, say):
//
//   { inprof::ProfileScope startup(opts); init(); }
//
// The dump holds raw addresses and the module list with build-ids; the `symbolicate` tool turns it
// into Firefox Profiler JSON later, on any machine that has the debug files.
//
// Every function here is thread-safe. No exception crosses this API.
#ifndef INPROF_PROFILER_H_
#define INPROF_PROFILER_H_

#if __cplusplus < 202002L
#error \
    "inprof's C++ headers need C++20 (-std=c++20 or later); from C or C++17, use <inprof/inprof.h>"
#endif

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#if defined(_WIN32)
#define INPROF_API
#else
#define INPROF_API __attribute__((visibility("default")))
#endif

namespace inprof {

// The outcome of an operation: success, or a failure with a message written for a person.
// Converts to bool (`bool ok = Profiler::start();`). The calls that can fail where it matters
// are [[nodiscard]]; stop() is not: a program that ends does not have to look.
class Status {
 public:
  enum class Code {
    kOk,
    kAlreadyRunning,  // start() while a session runs
    kNotRunning,      // stop() with no session
    kInvalidOption,   // an Options field is out of range
    kSignalInUse,     // the program already handles the sampling signal
    kOutputError,     // the dump cannot be opened or written
    kPlatformError,   // the OS refused something the profiler needs
    kDisabled,        // the program was built with INPROF_DISABLE
  };

  Status() = default;  // success
  static Status error(Code code, std::string message) { return Status(code, std::move(message)); }

  bool ok() const { return code_ == Code::kOk; }
  operator bool() const { return ok(); }  // NOLINT(google-explicit-constructor): as documented
  Code code() const { return code_; }
  // Empty on success; otherwise says what went wrong and, where it can, what to do.
  const std::string& message() const { return message_; }

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// How the sampler turns a stack copy into frames.
enum class UnwindMethod {
  kAuto,          // DWARF CFI where a module has it, frame pointers elsewhere (JIT code)
  kDwarf,         // DWARF CFI only: stop where there is none
  kFramePointer,  // frame pointers only: cheapest, complete only in code built with them
};

// Where samples and markers go while a session runs.
enum class Mode {
  // A writer thread streams them to the dump file as the program runs (every sample is kept).
  kStream,
  // Flight recorder: they stay in memory, in a ring of `buffer_size` bytes that overwrites its
  // oldest records; no thread writes anything while the program runs. capture() writes what the
  // ring holds (the last seconds) to a dump at any time; stop() writes it to `output_path`.
  kRing,
};

// How a profiling session runs. The defaults suit most programs.
struct Options {
  // Time between two samples of each thread; 100 µs to 1 s.
  std::chrono::nanoseconds interval = std::chrono::milliseconds(1);

  // Where the dump goes. Empty means "inprof-<pid>.inprof" in the working directory.
  // The file is created with mode 0600; a symbolic link, a FIFO or a device at that path is
  // refused. A path another live process is writing is never shared: this process then writes
  // "<path without extension>-<pid>.<extension>" and says so on stderr.
  std::string output_path;

  // Memory for samples between the sampler and the writer thread, in bytes (64 KiB to 1 GiB).
  // Memory stays bounded whatever the run's length; if the writer falls behind, samples are
  // dropped and counted in the dump, never corrupted.
  std::size_t buffer_size = 8u << 20;

  // At most how many bytes of a thread's stack are copied per sample (4 KiB to 1 MiB): a copy
  // takes only the stack there is. A deeper stack is recorded up to this point and marked
  // truncated. (Deep recursions, a compiler's say, reach 200 KiB and 4,000 frames.)
  std::size_t stack_copy_size = 256u << 10;

  // Most frames recorded per sample (8 to 4096).
  std::size_t max_frames = 4096;

  UnwindMethod unwinder = UnwindMethod::kAuto;

  // Sample only threads whose name contains one of these substrings (empty: every thread).
  // Names given with set_thread_name() count, and a thread renamed later is re-checked.
  std::vector<std::string> thread_filters;

  // The signal used to interrupt threads (Linux). 0 picks SIGURG, whose default action is to
  // ignore: a sampling signal still pending across execve cannot kill the new program. start()
  // refuses a signal the program already handles.
  int sample_signal = 0;

  // How long the sampler waits for a thread to answer before skipping it for this tick (a thread
  // that blocks the signal never answers). 100 µs to 1 s.
  std::chrono::nanoseconds thread_answer_timeout = std::chrono::milliseconds(20);

  Mode mode = Mode::kStream;
  // Ring mode: captures hold at most the last this-many seconds (0: whatever `buffer_size` holds).
  // Memory is still bounded by `buffer_size`; a capture says which time range it really covers.
  std::chrono::seconds ring_seconds{0};
  // Ring mode: on this signal (0: none), capture to `output_path` with "-capture-N" before its
  // extension, N counting from 1. start() refuses a signal the program already handles.
  int capture_signal = 0;
  // Ring mode, opt-in: on SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT, write the ring, the module
  // list and a marker at the crash to `crash_path` (empty: `output_path` with "-crash" before its
  // extension), using only async-signal-safe calls on a file opened by start(), then let the
  // program's previous handler (or the default action) take the signal as it would have. The file
  // is removed at stop() if no crash happened. A stack overflow is caught only on a thread that
  // has an alternate signal stack (sigaltstack).
  bool crash_capture = false;
  std::string crash_path;

  // Stream mode, continuous profiling of a long-running program: every this-long the writer
  // thread closes the dump and opens the next (0: one dump for the whole session; otherwise
  // 100 ms to a year). Each window's dump is complete on its own (process, modules, threads,
  // declarations, the samples of its time range) and every sample is in exactly one window.
  // `output_path` may hold %n (the window's number, from 1), %t (its start, UTC,
  // 20261126T045000Z) and %p (the process id); without %n or %t, "-%n" goes before the
  // extension. The program's threads never wait for a rotation.
  std::chrono::nanoseconds rotate_interval{0};
  // With rotate_interval: keep only the newest this-many window dumps, removing older ones from
  // the disk (0: keep them all).
  std::size_t keep_files = 0;
  // Sampled native allocations (Linux, glibc): 0 (the default) records none; otherwise the mean
  // number of bytes allocated between two recorded allocations (512 KiB is a good default; 1
  // records every allocation). Each recorded allocation keeps its stack and stands for the bytes
  // it represents; frees of recorded blocks are recorded too. Needs the allocation interposer in
  // the process: link inprof::allocations, or preload libinprof_allocations.so (`inprof record
  // --allocations` does); start() fails otherwise.
  std::size_t allocation_sample_bytes = 0;
  // CPU samples: false records none (a memory-only profile with allocation_sample_bytes, or only
  // markers and counters): no thread is ever interrupted and no signal handler is installed
  // (sample_signal is then unused). Threads are still listed and named.
  bool cpu_samples = true;
};

// The process-wide profiler. At most one session runs at a time.
class INPROF_API Profiler {
 public:
  // Starts sampling every thread of the process. Fails (and changes nothing) if a session already
  // runs, an option is out of range, the output cannot be created or the signal is taken.
  [[nodiscard]] static Status start(const Options& options = {});

  // Stops sampling, writes every remaining record and closes the dump. Reports any write error
  // that happened during the session. Safe to call from any thread.
  static Status stop();

  static bool is_running();

  // Suspends sampling (and marker recording) without ending the session; the paused range is
  // shown in the profile. resume() continues. Both fail if no session runs.
  [[nodiscard]] static Status pause();
  [[nodiscard]] static Status resume();
  // Ring mode: writes what the ring holds now to a dump at `path` (the same format as a stream
  // dump, read by `symbolicate`) while sampling goes on; the profile states the time range it
  // covers. Fails if no session runs, the session streams, or the file cannot be written.
  [[nodiscard]] static Status capture(const std::string& path);

  Profiler() = delete;
};

// Profiles the enclosing scope: starts in the constructor, stops (and writes) in the destructor.
class INPROF_API ProfileScope {
 public:
  explicit ProfileScope(const Options& options = {});
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

  // Whether the constructor's start() succeeded (and why not).
  const Status& status() const { return status_; }

 private:
  Status status_;
};

// Names the calling thread in profiles. Takes precedence over the OS thread name and is kept for
// later sessions too. Callable whether or not a session runs.
INPROF_API void set_thread_name(std::string_view name);

// Every thread is sampled by default (or those Options::thread_filters select). register_thread
// names the calling thread and has it sampled even when the filters would leave it out;
// unregister_thread stops sampling it (until it registers again). Both last for later sessions.
INPROF_API void register_thread(std::string_view name);
INPROF_API void unregister_thread();

// Pull mode (docs/fleet.md): answers scrapes of /debug/pprof/ (`go tool pprof`, Parca, Grafana
// Alloy) on a loopback address ("127.0.0.1:6060", "[::1]:6060") or a UNIX socket
// ("unix:/run/app/pprof.sock") from a thread of the profiler's. A scrape reads the program's own
// streaming session when one runs; otherwise it samples with `options` for its window alone.
// Linux only; nothing is opened until this is called (or INPROF_PULL asks for it).
INPROF_API Status serve_pprof(std::string_view address, const Options& options = {});
INPROF_API Status stop_serving_pprof();

// The library's version, "major.minor.patch".
INPROF_API const char* version();

#if defined(INPROF_DISABLE)
// Compiled out: every call does nothing and the program links without the library.
inline Status Profiler::start(const Options&) {
  return Status::error(Status::Code::kDisabled, "profiling was compiled out (INPROF_DISABLE)");
}
inline Status Profiler::stop() { return start(); }
inline bool Profiler::is_running() { return false; }
inline Status Profiler::pause() { return start(); }
inline Status Profiler::resume() { return start(); }
inline Status Profiler::capture(const std::string&) { return start(); }
inline Status serve_pprof(std::string_view, const Options&) { return Profiler::start(); }
inline Status stop_serving_pprof() { return Profiler::start(); }
inline ProfileScope::ProfileScope(const Options& options) : status_(Profiler::start(options)) {}
inline ProfileScope::~ProfileScope() {}
inline void set_thread_name(std::string_view) {}
inline void register_thread(std::string_view) {}
inline void unregister_thread() {}
inline const char* version() { return "disabled"; }
#endif

}  // namespace inprof

#endif  // INPROF_PROFILER_H_
