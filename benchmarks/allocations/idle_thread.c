// Preloaded by compare.sh's "thread" configuration: starts one thread that sleeps for the whole
// run and does nothing else. What that costs a program is what any profiler's thread costs it
// before doing any work: once a process has a second thread, glibc's malloc takes its arena
// locks (its single-thread fast path is off for good).
#include <pthread.h>
#include <unistd.h>

static void* sleep_forever(void* unused) {
  (void)unused;
  for (;;) pause();
  return 0;
}

__attribute__((constructor)) static void start_idle_thread(void) {
  pthread_t thread;
  if (pthread_create(&thread, 0, sleep_forever, 0) == 0) pthread_detach(thread);
}
