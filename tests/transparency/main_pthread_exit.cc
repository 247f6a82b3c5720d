// Item (issue 39): a program whose main() ends with pthread_exit() exits when its last thread
// does. main starts a worker that computes for ~300 ms (sampled) and returns, and leaves by
// pthread_exit(nullptr): the process must then end by itself with status 0, its output flushed.
// A profiler whose own threads are still running (joinable, waiting for work) would keep it
// alive for ever: run_transparency.sh kills a run after 60 s and reports it as hung.
#include <pthread.h>

#include <cstdio>

#include "transparency.h"

namespace {

void* worker(void*) {
  transparency::spin_cpu_ms(300);
  std::printf("worker: done\n");
  std::fflush(stdout);
  return nullptr;
}

}  // namespace

int main() {
  transparency::spin_cpu_ms(20);
  std::printf("main: pthread_exit\n");  // before the worker starts: the order never changes
  std::fflush(stdout);
  pthread_t thread;
  if (pthread_create(&thread, nullptr, worker, nullptr) != 0) return 2;
  pthread_exit(nullptr);
}
