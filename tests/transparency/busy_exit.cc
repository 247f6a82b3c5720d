// exit() while every CPU is busy (issue 39, item 14): 64 threads spin, main() calls exit(3) from
// under them. The process ends with the program's own atexit handler run and status 3, as
// unprofiled, and the dump is complete (run with COMPLETE). The profiler's sampler may then have
// had no CPU for a while: exit() waits for it only while it runs (its last tick's samples are
// given up, counted), never for the scheduler to come round to it among 64 spinners.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "transparency.h"

namespace {

constexpr int kThreads = 64;
std::atomic<int> g_started{0};

void* spin(void*) {
  g_started.fetch_add(1);
  volatile uint64_t x = 0;
  for (;;) x = x + 1;
  return nullptr;
}

void said_at_exit() {
  std::printf("the program's atexit handler ran\n");
  std::fflush(stdout);
}

}  // namespace

int main() {
  std::atexit(said_at_exit);
  for (int i = 0; i < kThreads; ++i) {
    pthread_t thread;
    if (pthread_create(&thread, nullptr, spin, nullptr) != 0) {
      std::printf("pthread_create failed\n");
      return 1;
    }
  }
  while (g_started.load() < kThreads) transparency::spin_cpu_us(100);
  // Long enough for the sampler to fall behind among the spinners.
  const uint64_t until = transparency::now_ns() + 300000000u;
  while (transparency::now_ns() < until) usleep(10000);
  std::printf("%d threads spinning; exit(3)\n", kThreads);
  std::fflush(stdout);
  std::exit(3);
}
