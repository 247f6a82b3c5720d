// A service for pull mode's tests: one thread computes in hot_spin() (and a little in
// cold_spin()), one sleeps in a condition variable, for the seconds given (default 10), then it
// exits 0. With INPROF_PULL set, scrapes profile it; it never calls the profiler itself unless
// given `--serve ADDRESS` (the API's way). `--allocate`: a third thread allocates (see below).
#include <fcntl.h>
#include <inprof/markers.h>
#include <inprof/profiler.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

std::atomic<bool> g_done{false};
volatile double g_sink = 0;

// Global, not inline: `go tool pprof` names a C++ function from DWARF only where its entry
// carries the name (not one in an anonymous namespace, whose entry refers to a declaration).
__attribute__((noinline)) void hot_spin() {
  double x = 1.0;
  for (int i = 0; i < 200000; ++i) x = x * 1.0000001 + 0.5;
  g_sink = g_sink + x;
}

__attribute__((noinline)) void cold_spin() {
  double x = 2.0;
  for (int i = 0; i < 20000; ++i) x = x * 0.9999999 + 0.25;
  g_sink = g_sink + x;
}

// With --allocate: keep_blocks() allocates 8 MiB that stay (4 KiB blocks; "kept" is printed
// then), churn_blocks() allocates and frees 64 KiB blocks all along.
std::vector<void*> g_kept;
void* volatile g_last_churned = nullptr;  // so that the compiler keeps the malloc and free

__attribute__((noinline)) void keep_blocks() {
  for (int i = 0; i < 2048; ++i) g_kept.push_back(std::malloc(4096));
}

__attribute__((noinline)) void churn_blocks() {
  void* p = std::malloc(65536);
  g_last_churned = p;
  std::free(g_last_churned);
}

namespace {

void allocator() {
  keep_blocks();
  std::printf("kept\n");  // the checker asks for the heap only after this
  std::fflush(stdout);
  while (!g_done.load(std::memory_order_relaxed)) {
    for (int i = 0; i < 64; ++i) churn_blocks();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void worker() {
  // A label around the hot part, an interval marker around the cold one: pprof labels.
  while (!g_done.load(std::memory_order_relaxed)) {
    {
      inprof::LabelScope hot("hot");
      for (int i = 0; i < 9; ++i) hot_spin();
    }
    inprof::MarkerScope cold("cold");
    cold_spin();
  }
}

void sleeper() {
  std::mutex m;
  std::condition_variable cv;
  std::unique_lock lock(m);
  cv.wait(lock, [] { return g_done.load(); });
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 10;
  const char* serve = nullptr;
  bool allocate = false;
  bool close_descriptors = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--allocate") == 0) {
      allocate = true;
    } else if (std::strcmp(argv[i], "--close-descriptors") == 0) {
      close_descriptors = true;
    } else if (std::strcmp(argv[i], "--serve") == 0 && i + 1 < argc) {
      serve = argv[++i];
    } else {
      seconds = std::atof(argv[i]);
    }
  }
  if (serve) {
    inprof::Status s = inprof::serve_pprof(serve);
    if (!s.ok()) {
      std::fprintf(stderr, "serve_pprof: %s\n", s.message().c_str());
      return 2;
    }
  }
  std::printf("ready\n");
  std::fflush(stdout);
  if (close_descriptors) {
    // As a daemon does: every descriptor but the standard ones closed, then files of its own,
    // which get the numbers the profiler's sockets had.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (int fd = 3; fd < 1024; ++fd) close(fd);
    for (int i = 0; i < 4; ++i) {
      if (open("/dev/zero", O_RDONLY) < 0) return 3;
    }
  }
  std::thread work(worker);
  std::thread sleep(sleeper);
  std::thread allocating;
  if (allocate) allocating = std::thread(allocator);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  g_done = true;
  sleep.detach();  // it wakes on its own predicate check only when notified: left to exit()
  work.join();
  if (allocating.joinable()) allocating.join();
  return 0;
}
