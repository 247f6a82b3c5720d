// torture SCENARIO DUMP: runs one scenario under inprof at 10 kHz. `torture --list` names them.
// Exit status 0 means the workload finished with correct results and stop() succeeded (the exit
// scenarios end with their own documented status instead).
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstdarg>
#include <cstring>
#include <ctime>
#include <map>
#include <string>

#include "torture.h"

namespace torture {
namespace {

std::map<std::string, ScenarioFn>& scenarios() {
  static auto* m = new std::map<std::string, ScenarioFn>;  // filled before main, never freed
  return *m;
}

const char* g_name = "?";

// On a crash, the stack of the faulting thread goes to stderr before the signal kills us, so a
// CI log says where. (backtrace() is not async-signal-safe; we are dying anyway.)
void on_crash(int sig) {
  char line[128];
  int n = std::snprintf(line, sizeof(line), "scenario %s: CRASH: %s; backtrace:\n", g_name,
                        strsignal(sig));
  if (n > 0) (void)!write(2, line, static_cast<size_t>(n));
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
  raise(sig);  // SA_RESETHAND: the default action now
}

void install_crash_handlers() {
  void* warm[1];
  backtrace(warm, 1);  // loads libgcc now, not in the handler
  struct sigaction sa = {};
  sa.sa_handler = on_crash;
  sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) sigaction(sig, &sa, nullptr);
}

}  // namespace

Registrar::Registrar(const char* name, ScenarioFn fn) { scenarios()[name] = fn; }

void fail(const char* file, int line, const char* format, ...) {
  std::fflush(stdout);  // what the scenario printed before failing explains the failure
  std::fprintf(stderr, "scenario %s: FAIL at %s:%d: ", g_name, file, line);
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
  std::fflush(stderr);
  std::_Exit(1);
}

inprof::Options options(const Context& ctx) {
  inprof::Options o;
  o.interval = std::chrono::microseconds(100);
  o.output_path = ctx.dump_path;
  // INPROF_TORTURE_SIGNAL=N samples with signal N instead of the default (to show what the
  // default protects against, e.g. 27, SIGPROF, in exec_from_busy_threads).
  if (const char* sig = std::getenv("INPROF_TORTURE_SIGNAL")) o.sample_signal = std::atoi(sig);
#if defined(TORTURE_ALLOCATIONS)
  // torture_allocations (linked with inprof::allocations): every allocation recorded as well.
  o.allocation_sample_bytes = 1;
#endif
  return o;
}

void start(const Context& ctx) {
  inprof::Status s = inprof::Profiler::start(options(ctx));
  TT_CHECK(s.ok(), "Profiler::start: %s", s.message().c_str());
}

void stop() {
  inprof::Status s = inprof::Profiler::stop();
  TT_CHECK(s.ok(), "Profiler::stop: %s", s.message().c_str());
}

uint64_t mix(uint64_t seed, uint64_t rounds) {
  uint64_t x = seed;
  for (uint64_t i = 0; i < rounds; ++i) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 29;
    x += i;
    asm volatile("" : "+r"(x));  // keeps the loop a loop
  }
  return x;
}

void report(const Context& ctx, const char* format, ...) {
  std::printf("scenario %s: workload ok: ", ctx.name.c_str());
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::printf("\n");
  std::fflush(stdout);
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

}  // namespace torture

int main(int argc, char** argv) {
  using namespace torture;
  if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
    for (auto& [name, fn] : scenarios()) std::printf("%s\n", name.c_str());
    return 0;
  }
  // The target of fork_exec_storm: exits at once with the status it is given.
  if (argc == 3 && std::strcmp(argv[1], "--exit-with") == 0) return std::atoi(argv[2]);
  if (argc != 3) {
    std::fprintf(stderr, "usage: torture SCENARIO DUMP | torture --list\n");
    return 2;
  }
  auto it = scenarios().find(argv[1]);
  if (it == scenarios().end()) {
    std::fprintf(stderr, "torture: no scenario '%s' (see --list)\n", argv[1]);
    return 2;
  }
  install_crash_handlers();
  Context ctx;
  ctx.name = argv[1];
  g_name = argv[1];
  ctx.dump_path = argv[2];
  const char* soak = std::getenv("INPROF_SOAK");
  ctx.soak = soak != nullptr && std::strcmp(soak, "0") != 0 && *soak != '\0';
  if (ctx.soak) ctx.seconds = 60;
  if (const char* s = std::getenv("INPROF_TORTURE_SECONDS")) ctx.seconds = std::atof(s);
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) ctx.self_path.assign(self, static_cast<size_t>(n));
  return it->second(ctx);
}
