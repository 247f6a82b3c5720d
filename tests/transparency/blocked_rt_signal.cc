// Item: signals for threads that block them never pile up. Eight threads block every signal and
// compute; the profiler uses a real-time signal (ENV below), which queues instead of merging.
// Afterwards no thread has anything pending, and the program's own sigqueue() still works
// (RLIMIT_SIGPENDING is the program's).
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "transparency.h"

int main() {
  std::atomic<int> pending_found{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      sigset_t all;
      sigfillset(&all);
      pthread_sigmask(SIG_BLOCK, &all, nullptr);
      transparency::spin_cpu_ms(150);
      sigset_t pending;
      sigpending(&pending);
      for (int s = 1; s < NSIG; ++s) {
        if (sigismember(&pending, s)) pending_found.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::printf("signals pending in blocking threads: %d\n", pending_found.load());
  sigset_t rt;
  sigemptyset(&rt);
  sigaddset(&rt, SIGRTMIN + 5);
  pthread_sigmask(SIG_BLOCK, &rt, nullptr);
  int queued = 0;
  for (int i = 0; i < 200; ++i) {
    if (sigqueue(getpid(), SIGRTMIN + 5, sigval{i}) == 0) ++queued;
  }
  std::printf("own real-time signals queued: %d of 200\n", queued);
  return 0;
}
