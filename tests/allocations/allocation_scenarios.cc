// Allocations where an interposer is easy to get wrong (issue 24): in a thread's TLS
// destructors as it exits, in a dlopen'ed library's constructor (under the loader's lock), in a
// fork child, and in a signal handler that interrupts the allocator. Run under
// `inprof record --allocations=...`: it must finish as it does unprofiled, and each site must
// show up in the profile's allocation sites (run_allocations_test.sh checks).
//
// Usage: allocation_scenarios PATH_TO_DLOPEN_LIBRARY
#include <dlfcn.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

std::atomic<void*> g_sink{nullptr};

__attribute__((noinline)) void thread_exit_site() {
  for (int i = 0; i < 200; ++i) {
    void* p = std::malloc(100 + i);
    g_sink.store(p);
    std::free(p);
  }
}

struct AllocatesAtExit {
  ~AllocatesAtExit() { thread_exit_site(); }
};

void thread_body() {
  thread_local AllocatesAtExit at_exit;
  (void)&at_exit;
  for (int i = 0; i < 100; ++i) delete[] new char[64];
}

__attribute__((noinline)) void fork_child_site() {
  for (int i = 0; i < 1000; ++i) {
    void* p = std::malloc(256);
    g_sink.store(p);
    std::free(p);
  }
}

std::atomic<int> g_handler_runs{0};

__attribute__((noinline)) void signal_handler_site() {
  void* p = std::malloc(48);  // not async-signal-safe; programs do it anyway
  g_sink.store(p);
  std::free(p);
}

void on_alarm(int) {
  signal_handler_site();
  g_handler_runs.fetch_add(1);
}

// Allocates, then computes for a while: most timer signals land outside the allocator (one
// landing inside the profiler's recording path is not recorded, by design).
__attribute__((noinline)) void main_loop_site(int rounds) {
  for (int i = 0; i < rounds; ++i) {
    void* p = std::malloc(32 + i % 512);
    g_sink.store(p);
    std::free(p);
    volatile uint64_t x = 1;
    for (int k = 0; k < 20000; ++k) x = x * 6364136223846793005ull + 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: allocation_scenarios DLOPEN_LIBRARY\n");
    return 2;
  }
  // Thread exit: TLS destructors allocate after the thread's function returned.
  for (int round = 0; round < 4; ++round) {
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) threads.emplace_back(thread_body);
    for (auto& t : threads) t.join();
  }
  // dlopen: the library's constructor allocates while the loader holds its lock.
  void* library = dlopen(argv[1], RTLD_NOW);
  if (!library) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  auto* kept = reinterpret_cast<void* (*)()>(dlsym(library, "dlopen_constructor_kept"));
  if (!kept || !kept()) return 1;
  // fork: the child allocates (and exits normally, writing its own dump if profiled).
  const pid_t child = fork();
  if (child == 0) {
    fork_child_site();
    std::exit(0);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "fork child failed\n");
    return 1;
  }
  // A signal handler that allocates, interrupting allocations.
  struct sigaction action {};
  action.sa_handler = on_alarm;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &action, nullptr);
  itimerval timer{{0, 200}, {0, 200}};
  setitimer(ITIMER_REAL, &timer, nullptr);
  for (int i = 0; i < 20000 && g_handler_runs.load() < 50; ++i) main_loop_site(10);
  itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
  signal(SIGALRM, SIG_IGN);
  if (g_handler_runs.load() == 0) {
    std::fprintf(stderr, "the timer never fired\n");
    return 1;
  }
  std::printf("ok handler_runs=%d\n", g_handler_runs.load());
  return 0;
}
