// The comparison harness's workload: a fixed amount of deterministic CPU work on N threads, each
// running it `--depth` calls below its thread function, so that every tool's stacks can be
// checked for reaching the thread start. Built twice: with and without frame pointers.
//
// At exit it writes one line of facts about itself (to --report, or stdout):
//   worker_cpu_ns  CPU time of the worker threads (what a profiler's interruptions cost them)
//   process_cpu_ns CPU time of the whole process (adds in-process profiler threads)
//   wall_ns, maxrss_kb (peak RSS), checksum (identical on every run: the work did not change),
//   signals (answered, with the options below)
//
// --bare-signal-hz HZ adds the floor of any signal-based sampler: a pacer thread interrupts
// each worker HZ times per second with an empty handler and waits for it to run; --batch
// signals every worker first and then waits for all (what a batched sampler would do).
// --timer-signal-hz HZ: no pacer; a per-thread kernel timer signals each worker HZ times per
// second (the floor of a sampler whose signals need no thread of its own).
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

uint64_t clock_ns(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// The leaf: integer mixing over a small table, two shapes so that samples land in more than
// one function. `rounds` fixes the amount of work.
__attribute__((noinline)) uint64_t mix_table(uint64_t seed, int rounds) {
  uint64_t table[64];
  for (int i = 0; i < 64; ++i) table[i] = seed + uint64_t(i) * 0x9E3779B97F4A7C15ull;
  uint64_t x = seed | 1;
  for (int r = 0; r < rounds; ++r) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    table[x & 63] += x;
  }
  uint64_t sum = 0;
  for (uint64_t v : table) sum ^= v;
  return sum;
}

__attribute__((noinline)) uint64_t multiply_chain(uint64_t seed, int rounds) {
  uint64_t a = seed | 1, b = seed ^ 0xdeadbeef;
  for (int r = 0; r < rounds; ++r) {
    a = a * 6364136223846793005ull + 1442695040888963407ull;
    b += (a >> 17) * (b | 3);
    asm volatile("" : "+r"(a), "+r"(b));
  }
  return a ^ b;
}

// `depth` frames of this function above the leaf; the xor after the call keeps each frame.
__attribute__((noinline)) uint64_t descend(int depth, uint64_t seed, int rounds) {
  if (depth == 0) {
    return (seed & 1) ? mix_table(seed, rounds) : multiply_chain(seed, rounds);
  }
  uint64_t r = descend(depth - 1, seed * 31 + uint64_t(depth), rounds);
  asm volatile("" : "+r"(r));
  return r ^ uint64_t(depth);
}

struct Shared {
  int depth = 20;
  long units = 30000;
  int rounds_per_unit = 20000;
  // Start line: the workers block until all exist (no spinning outside the measured work).
  std::mutex mutex;
  std::condition_variable cv;
  int ready = 0;
  bool go = false;
  std::atomic<uint64_t> worker_cpu_ns{0};
  std::atomic<uint64_t> checksum{0};
  double timer_hz = 0;
  std::vector<std::atomic<pid_t>> tids;
  explicit Shared(int threads) : tids(threads) {}
};

// The floor without any sampler thread: a kernel timer per thread (CLOCK_MONOTONIC, so not
// limited by the scheduler tick) sends the signal straight to it; the handler only counts.
std::atomic<uint64_t> g_timer_signals{0};
void timer_handler(int) { g_timer_signals.fetch_add(1, std::memory_order_relaxed); }

void arm_thread_timer(double hz, timer_t* timer) {
  static std::once_flag installed;
  std::call_once(installed, [] {
    struct sigaction sa = {};
    sa.sa_handler = timer_handler;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGRTMIN + 2, &sa, nullptr);
  });
  sigevent sev = {};
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGRTMIN + 2;
  sev._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
  if (timer_create(CLOCK_MONOTONIC, &sev, timer) != 0) return;
  const long period = static_cast<long>(1e9 / hz);
  itimerspec spec{{period / 1000000000, period % 1000000000},
                  {period / 1000000000, period % 1000000000}};
  timer_settime(*timer, 0, &spec, nullptr);
}

__attribute__((noinline)) void worker(Shared& s, int index) {
  s.tids[index] = static_cast<pid_t>(syscall(SYS_gettid));
  {
    std::unique_lock lock(s.mutex);
    ++s.ready;
    s.cv.notify_all();
    s.cv.wait(lock, [&] { return s.go; });
  }
  timer_t timer{};
  if (s.timer_hz > 0) arm_thread_timer(s.timer_hz, &timer);
  const uint64_t cpu_start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  uint64_t sum = 0;
  for (long u = 0; u < s.units; ++u) {
    sum += descend(s.depth, uint64_t(index) * 1000003u + uint64_t(u), s.rounds_per_unit);
  }
  if (s.timer_hz > 0) timer_delete(timer);
  s.worker_cpu_ns.fetch_add(clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_start);
  s.checksum.fetch_xor(sum + uint64_t(index));
}

// The handler's whole work: count itself, and wake the pacer if it sleeps (as inprof's does).
std::atomic<uint32_t> g_bare_answered{0};
std::atomic<uint32_t> g_pacer_waiting{0};
void bare_handler(int) {
  g_bare_answered.fetch_add(1, std::memory_order_seq_cst);
  if (g_pacer_waiting.load(std::memory_order_seq_cst)) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g_bare_answered),
            FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, nullptr, nullptr, 0);
  }
}

// Waits until `expected` handlers ran, like inprof's sampler waits for one: spins 50 µs (a
// round trip to a running thread takes a few), then sleeps on a futex, so that a target waiting
// for this CPU can run. Gives up after 20 ms; returns how many answered.
uint32_t wait_for_answers(uint32_t expected) {
  const uint64_t start = clock_ns(CLOCK_MONOTONIC);
  while (clock_ns(CLOCK_MONOTONIC) - start < 50000) {
    if (g_bare_answered.load(std::memory_order_acquire) >= expected) return expected;
  }
  const timespec slice{0, 1000000};
  for (;;) {
    const uint32_t seen = g_bare_answered.load(std::memory_order_seq_cst);
    if (seen >= expected || clock_ns(CLOCK_MONOTONIC) - start > 20000000) return seen;
    g_pacer_waiting.store(1, std::memory_order_seq_cst);
    if (g_bare_answered.load(std::memory_order_seq_cst) == seen) {
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g_bare_answered),
              FUTEX_WAIT | FUTEX_PRIVATE_FLAG, seen, &slice, nullptr, 0);
    }
    g_pacer_waiting.store(0, std::memory_order_relaxed);
  }
}

// The floor of a signal-based sampler: tgkill, an empty handler, the pacer waits until it ran,
// one thread after the other (as inprof does today) or, with `batch`, all threads signalled
// first and then awaited together. Returns signals answered.
uint64_t pace_bare_signals(Shared& s, double hz, bool batch, std::atomic<bool>& done) {
  struct sigaction sa = {};
  sa.sa_handler = bare_handler;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR2, &sa, nullptr);
  const uint64_t period = static_cast<uint64_t>(1e9 / hz);
  uint64_t next = clock_ns(CLOCK_MONOTONIC);
  uint64_t answered = 0;
  const pid_t pid = getpid();
  while (!done.load(std::memory_order_acquire)) {
    if (batch) {
      g_bare_answered.store(0);
      uint32_t sent = 0;
      for (auto& tid : s.tids) sent += syscall(SYS_tgkill, pid, tid.load(), SIGUSR2) == 0;
      answered += wait_for_answers(sent);
    } else {
      for (auto& tid : s.tids) {
        g_bare_answered.store(0);
        if (syscall(SYS_tgkill, pid, tid.load(), SIGUSR2) != 0) continue;
        answered += wait_for_answers(1);
      }
    }
    next += period;
    const uint64_t now = clock_ns(CLOCK_MONOTONIC);
    if (now >= next) next += ((now - next) / period + 1) * period;  // skip, never bunch up
    timespec ts{static_cast<time_t>(next / 1000000000u), static_cast<long>(next % 1000000000u)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
  }
  return answered;
}

int usage() {
  std::fprintf(stderr,
               "usage: compare_workload [--threads N] [--units N] [--rounds N] [--depth D]\n"
               "                        [--bare-signal-hz HZ [--batch]] [--timer-signal-hz HZ]\n"
               "                        [--report FILE]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  long units = 30000;
  int rounds = 20000;
  int depth = 20;
  double bare_hz = 0, timer_hz = 0;
  bool batch = false;
  std::string report;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--batch") {
      batch = true;
      continue;
    }
    if (i + 1 >= argc) return usage();
    const char* v = argv[++i];
    char* end = nullptr;
    if (a == "--threads")
      threads = static_cast<int>(std::strtol(v, &end, 10));
    else if (a == "--units")
      units = std::strtol(v, &end, 10);
    else if (a == "--rounds")
      rounds = static_cast<int>(std::strtol(v, &end, 10));
    else if (a == "--depth")
      depth = static_cast<int>(std::strtol(v, &end, 10));
    else if (a == "--bare-signal-hz")
      bare_hz = std::strtod(v, &end);
    else if (a == "--timer-signal-hz")
      timer_hz = std::strtod(v, &end);
    else if (a == "--report") {
      report = v;
      end = const_cast<char*>(v) + std::strlen(v);
    } else
      return usage();
    if (end == v || *end != '\0') return usage();
  }
  if (threads < 1 || threads > 256 || units < 1 || rounds < 1 || depth < 0 || depth > 200 ||
      bare_hz < 0 || bare_hz > 100000 || timer_hz < 0 || timer_hz > 100000) {
    return usage();
  }

  const uint64_t wall_start = clock_ns(CLOCK_MONOTONIC);
  Shared shared(threads);
  shared.timer_hz = timer_hz;
  shared.depth = depth;
  shared.units = units;
  shared.rounds_per_unit = rounds;
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) workers.emplace_back(worker, std::ref(shared), i);
  {
    std::unique_lock lock(shared.mutex);
    shared.cv.wait(lock, [&] { return shared.ready == threads; });
  }
  std::atomic<bool> done{false};
  uint64_t signals = 0;
  std::thread pacer;
  if (bare_hz > 0)
    pacer = std::thread([&] { signals = pace_bare_signals(shared, bare_hz, batch, done); });
  {
    std::lock_guard lock(shared.mutex);
    shared.go = true;
  }
  shared.cv.notify_all();
  for (auto& t : workers) t.join();
  done.store(true);
  if (pacer.joinable()) pacer.join();

  rusage usage_self;
  getrusage(RUSAGE_SELF, &usage_self);
  // Peak RSS of this program's own memory: VmHWM, not ru_maxrss, which keeps the high-water mark
  // of the process image before exec (the harness's Python, after a fork).
  long peak_kb = -1;
  if (FILE* status = std::fopen("/proc/self/status", "r")) {
    char row[256];
    while (std::fgets(row, sizeof(row), status)) {
      if (std::strncmp(row, "VmHWM:", 6) == 0) peak_kb = std::strtol(row + 6, nullptr, 10);
    }
    std::fclose(status);
  }
  const uint64_t process_cpu =
      (uint64_t(usage_self.ru_utime.tv_sec) + uint64_t(usage_self.ru_stime.tv_sec)) * 1000000000u +
      (uint64_t(usage_self.ru_utime.tv_usec) + uint64_t(usage_self.ru_stime.tv_usec)) * 1000u;
  char line[512];
  std::snprintf(line, sizeof(line),
                "worker_cpu_ns=%llu process_cpu_ns=%llu wall_ns=%llu maxrss_kb=%ld "
                "checksum=%016llx signals=%llu threads=%d depth=%d\n",
                static_cast<unsigned long long>(shared.worker_cpu_ns.load()),
                static_cast<unsigned long long>(process_cpu),
                static_cast<unsigned long long>(clock_ns(CLOCK_MONOTONIC) - wall_start), peak_kb,
                static_cast<unsigned long long>(shared.checksum.load()),
                static_cast<unsigned long long>(signals + g_timer_signals.load()), threads, depth);
  if (report.empty()) {
    std::fputs(line, stdout);
  } else {
    FILE* f = std::fopen(report.c_str(), "w");
    if (!f) {
      std::perror(report.c_str());
      return 1;
    }
    std::fputs(line, f);
    std::fclose(f);
  }
  return 0;
}
