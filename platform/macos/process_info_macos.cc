// Process facts and clocks on macOS. Timestamps are mach_absolute_time in nanoseconds (the clock
// the suspend copier stamps samples with); thread ids are pthread_threadid_np's 64-bit ids.
#include <algorithm>
#include <string>
#include <vector>

#include "darwin_declarations_macos.h"
#include "mach_api_macos.h"
#include "session/process_info.h"

namespace inprof::internal {

namespace d = darwin;

uint64_t process_id() { return static_cast<uint64_t>(d::getpid()); }

uint64_t current_thread_id() {
  uint64_t id = 0;
  d::pthread_threadid_np(nullptr, &id);
  return id;
}

uint64_t main_thread_id() {
  static const uint64_t id = [] {
    uint64_t main_id = 0;
    d::pthread_t main = d::pthread_main_thread_np();
    if (main != nullptr) d::pthread_threadid_np(main, &main_id);
    return main_id;
  }();
  return id;
}

const char* os_name() { return "macos"; }

std::string executable_path() {
  char buffer[4096];
  uint32_t size = sizeof(buffer);
  if (d::ns_get_executable_path(buffer, &size) != 0) return {};
  return buffer;
}

std::vector<std::string> command_line() {
  std::vector<std::string> args;
  const int argc = *d::ns_get_argc();
  char** argv = *d::ns_get_argv();
  for (int i = 0; i < argc && argv != nullptr && argv[i] != nullptr; ++i)
    args.emplace_back(argv[i]);
  return args;
}

// Async-signal-safe: mach_absolute_time reads the commpage; the timebase was read beforehand.
uint64_t monotonic_ns() { return system_mach_api().now_ns(); }

uint64_t current_thread_cpu_ns() {
  d::timespec ts{};
  if (d::clock_gettime(d::kClockThreadCputime, &ts) != 0) return 0;
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

uint64_t wall_clock_ns() {
  d::timespec ts{};
  d::clock_gettime(d::kClockRealtime, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// vm_read_overwrite checks the source range in the kernel: an unmapped page fails the call
// instead of faulting. Page by page, so that the copy ends at the first unreadable one.
size_t read_memory(uint64_t address, void* out, size_t size) {
  constexpr uint64_t kPage = 4096;  // 16 KiB pages on Apple silicon: 4 KiB steps stay exact
  size_t done = 0;
  while (done < size) {
    const uint64_t at = address + done;
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(size - done, kPage - at % kPage));
    d::vm_size_t got = 0;
    if (d::vm_read_overwrite(d::task_self_port, at, chunk,
                             reinterpret_cast<d::vm_address_t>(static_cast<char*>(out) + done),
                             &got) != d::kKernSuccessCode ||
        got == 0) {
      break;
    }
    done += got;
  }
  return done;
}

// macOS's signal numbers (sys/signal.h); no real-time signals.
int signal_number(const std::string& name) {
  static const struct {
    const char* name;
    int number;
  } kSignals[] = {{"HUP", 1},   {"INT", 2},   {"QUIT", 3},    {"TERM", 15}, {"URG", 16},
                  {"CONT", 19}, {"CHLD", 20}, {"TTIN", 21},   {"TTOU", 22}, {"IO", 23},
                  {"XCPU", 24}, {"XFSZ", 25}, {"VTALRM", 26}, {"PROF", 27}, {"WINCH", 28},
                  {"INFO", 29}, {"USR1", 30}, {"USR2", 31}};
  for (const auto& s : kSignals) {
    if (name == s.name) return s.number;
  }
  return 0;
}

void setup_profiler_thread(const char* name) {
  d::pthread_setname_np(name);  // macOS names only the calling thread
  const d::sigset_t all = ~d::sigset_t{0};
  d::pthread_sigmask(d::kSigBlock, &all, nullptr);
}

// One descriptor table per process here: the checks before each use are what protect it.
bool use_private_descriptor_table(int) { return false; }

void say_on_stderr(const std::string& line) { (void)d::write(2, line.data(), line.size()); }

void call_around_fork(void (*prepare)(), void (*parent)(), void (*child)()) {
  d::pthread_atfork(prepare, parent, child);
}

}  // namespace inprof::internal
