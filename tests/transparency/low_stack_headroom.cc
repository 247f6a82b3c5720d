// Item (issue 39): a thread running with little stack left is never pushed over its end. Threads
// with small stacks (PTHREAD_STACK_MIN + 16 KiB) recurse until only 2 to 6 KiB of their stack is
// left below them, then compute there for ~150 ms (no alternate stack): a profiler whose signal
// frame and handler need more than that would fault in its handler, and the program would die of
// SIGSEGV. Each thread reports ok; the headroom it had is checked, not printed.
#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "transparency.h"

namespace {

struct Job {
  size_t headroom = 0;   // bytes of stack to leave below the spinning frame
  uintptr_t low = 0;     // the stack's lowest address
  bool reached = false;  // got there (and no deeper than asked)
  bool ok = false;
};

__attribute__((noinline)) void descend(Job* job) {
  volatile char frame[256];  // each level takes a little more than this
  frame[0] = 1;
  const uintptr_t sp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (sp - job->low > job->headroom + 512) {
    descend(job);
  } else {
    job->reached = sp - job->low >= job->headroom - 512;
    transparency::spin_cpu_ms(150);
    job->ok = true;
  }
  frame[1] = frame[0];  // not a tail call
}

void* run(void* arg) {
  Job* job = static_cast<Job*>(arg);
  pthread_attr_t attr;
  pthread_getattr_np(pthread_self(), &attr);
  void* addr = nullptr;
  size_t size = 0;
  pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  job->low = reinterpret_cast<uintptr_t>(addr);
  transparency::spin_cpu_ms(10);  // running: the profiler looks at it
  descend(job);
  return nullptr;
}

}  // namespace

int main() {
  const size_t headrooms[] = {2048, 3072, 4096, 5120, 6144, 2048, 3072, 4096};
  constexpr int kThreads = sizeof(headrooms) / sizeof(headrooms[0]);
  std::vector<Job> jobs(kThreads);
  std::vector<pthread_t> threads(kThreads);
  long minimum = sysconf(_SC_THREAD_STACK_MIN);
  if (minimum < 16384) minimum = 16384;
  for (int i = 0; i < kThreads; ++i) {
    jobs[i].headroom = headrooms[i];
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, size_t(minimum) + 16384);
    if (pthread_create(&threads[i], &attr, run, &jobs[i]) != 0) return 2;
    pthread_attr_destroy(&attr);
  }
  for (int i = 0; i < kThreads; ++i) {
    pthread_join(threads[i], nullptr);
    std::printf("thread %d (%zu KiB left): %s\n", i, headrooms[i] / 1024,
                !jobs[i].ok       ? "did not finish"
                : jobs[i].reached ? "ok"
                                  : "ok, but not that low");
  }
  return 0;
}
