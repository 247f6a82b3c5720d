// The flight recorder's end-to-end program (check_flight.mjs checks what it writes).
//
//   flight_target DUMP
//     Ring mode, ring_seconds = 1. A "flight-busy" thread computes in flight_outer ->
//     flight_inner; main records a "Tick" marker (integer field `seq`) every 5 ms. After the busy
//     thread has used 1.5 s of CPU, main captures to DUMP-capture-1.inprof; after 1.5 s more, to
//     DUMP-capture-2.inprof; then stop() writes DUMP. The last `seq` recorded before each capture
//     goes to DUMP.expect.json. Then it runs itself twice to crash (below) and checks that each
//     child died of its own signal and left a crash file.
//
//   flight_target --crash segv|abort CRASHFILE
//     Ring mode with crash capture to CRASHFILE: computes in flight_doomed for 300 ms of CPU, then
//     dereferences a null pointer (segv) or calls abort() (abort) inside it.
//
// Waits are on the busy thread's CPU time, not the clock, so a loaded machine only makes it slower.
#include <inprof/markers.h>
#include <inprof/profiler.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>

#define FLIGHT_NOINLINE __attribute__((noinline))
#define FLIGHT_BARRIER() asm volatile("" ::: "memory")

namespace {

std::atomic<bool> g_done{false};
volatile unsigned long g_sink;

struct TickMarker {
  static constexpr std::string_view kName = "Tick";
  static constexpr inprof::MarkerField kFields[] = {{"seq", "Sequence", inprof::Format::kInteger}};
  static constexpr std::string_view kTableLabel = "tick {marker.data.seq}";
};

std::chrono::nanoseconds cpu_time_of(pthread_t thread) {
  clockid_t clock;
  timespec ts{};
  if (pthread_getcpuclockid(thread, &clock) != 0 || clock_gettime(clock, &ts) != 0) return {};
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

std::chrono::nanoseconds own_cpu_time() { return cpu_time_of(pthread_self()); }

void sleep_ms(long ms) {
  timespec t{ms / 1000, (ms % 1000) * 1'000'000};
  while (nanosleep(&t, &t) != 0) {
  }
}

}  // namespace

extern "C" FLIGHT_NOINLINE void flight_inner() {
  for (unsigned long i = 0; i < 100'000; ++i) g_sink = g_sink + i;
  FLIGHT_BARRIER();
}

extern "C" FLIGHT_NOINLINE void flight_outer() {
  while (!g_done.load(std::memory_order_relaxed)) flight_inner();
  FLIGHT_BARRIER();
}

extern "C" FLIGHT_NOINLINE void flight_doomed(int how) {
  const auto start = own_cpu_time();
  while (own_cpu_time() - start < std::chrono::milliseconds(300)) {
    for (unsigned long i = 0; i < 100'000; ++i) g_sink = g_sink + i;
  }
  if (how == 0) {
    volatile int* volatile nowhere = nullptr;
    *nowhere = 1;  // SIGSEGV
  }
  std::abort();
  FLIGHT_BARRIER();
}

namespace {

inprof::Options ring_options(const std::string& output) {
  inprof::Options options;
  options.mode = inprof::Mode::kRing;
  options.output_path = output;
  options.buffer_size = 4u << 20;
  return options;
}

int crash(const std::string& how, const std::string& crash_file) {
  inprof::Options options = ring_options(crash_file + ".unused");
  options.crash_capture = true;
  options.crash_path = crash_file;
  if (auto s = inprof::Profiler::start(options); !s) {
    std::fprintf(stderr, "flight_target: start: %s\n", s.message().c_str());
    return 2;
  }
  inprof::set_thread_name("flight-doomed");
  flight_doomed(how == "segv" ? 0 : 1);
  return 3;  // not reached
}

// Runs `self --crash how file` and checks it died of `signal` and wrote `file`.
bool crash_child(const char* self, const char* how, int signal, const std::string& file) {
  std::remove(file.c_str());
  std::remove((file + ".unused").c_str());
  const pid_t pid = fork();
  if (pid == 0) {
    execl(self, self, "--crash", how, file.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return false;
  if (!WIFSIGNALED(status) || WTERMSIG(status) != signal) {
    std::fprintf(stderr, "flight_target: the %s child ended with status %#x, not signal %d\n", how,
                 status, signal);
    return false;
  }
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  if (!in || in.tellg() < 64) {
    std::fprintf(stderr, "flight_target: the %s child left no crash file at %s\n", how,
                 file.c_str());
    return false;
  }
  std::fprintf(stderr, "flight_target: %s child died of signal %d and wrote %s (%lld bytes)\n", how,
               signal, file.c_str(), static_cast<long long>(in.tellg()));
  // The session's own dump, empty until a stop that never came, is not left beside it.
  if (std::ifstream(file + ".unused")) {
    std::fprintf(stderr, "flight_target: the %s child left its empty dump %s.unused\n", how,
                 file.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--crash") == 0) return crash(argv[2], argv[3]);
  if (argc != 2) {
    std::fprintf(stderr, "usage: flight_target DUMP | flight_target --crash segv|abort FILE\n");
    return 2;
  }
  const std::string dump = argv[1];
  inprof::Options options = ring_options(dump);
  options.ring_seconds = std::chrono::seconds(1);
  if (auto s = inprof::Profiler::start(options); !s) {
    std::fprintf(stderr, "flight_target: start: %s\n", s.message().c_str());
    return 1;
  }
  inprof::set_thread_name("flight-main");
  std::thread busy([] {
    inprof::set_thread_name("flight-busy");
    flight_outer();
  });
  const pthread_t busy_handle = busy.native_handle();

  long seq = 0;
  long last_before[2] = {0, 0};
  for (int capture = 0; capture < 2; ++capture) {
    const auto until = cpu_time_of(busy_handle) + std::chrono::milliseconds(1500);
    while (cpu_time_of(busy_handle) < until) {
      inprof::marker<TickMarker>("Tick", inprof::kCategoryUser, ++seq);
      sleep_ms(5);
    }
    last_before[capture] = seq;
    const std::string path = dump + "-capture-" + std::to_string(capture + 1) + ".inprof";
    if (auto s = inprof::Profiler::capture(path); !s) {
      std::fprintf(stderr, "flight_target: capture: %s\n", s.message().c_str());
      return 1;
    }
  }
  g_done = true;
  busy.join();
  if (auto s = inprof::Profiler::stop(); !s) {
    std::fprintf(stderr, "flight_target: stop: %s\n", s.message().c_str());
    return 1;
  }
  std::ofstream(dump + ".expect.json")
      << "{\"capture1_last_seq\": " << last_before[0]
      << ", \"capture2_last_seq\": " << last_before[1] << ", \"ring_seconds\": 1}\n";
  const bool crashes_ok = crash_child(argv[0], "segv", SIGSEGV, dump + "-crash-segv.inprof") &&
                          crash_child(argv[0], "abort", SIGABRT, dump + "-crash-abort.inprof");
  return crashes_ok ? 0 : 1;
}
