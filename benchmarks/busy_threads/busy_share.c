// N threads spin for SECONDS, each named spin-NN; at the end each prints its tid, name and CPU
// time by its own clock: what each busy thread's share of the profile should be (busy_share.py).
//   busy_share N [seconds=3]
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;

struct Result {
  pid_t tid;
  double cpu_ms;
};

static void* spin(void* arg) {
  struct Result* result = arg;
  result->tid = gettid();
  volatile unsigned long x = 0;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) x++;
  struct timespec cpu;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  result->cpu_ms = (double)cpu.tv_sec * 1e3 + (double)cpu.tv_nsec / 1e6;
  return NULL;
}

int main(int argc, char** argv) {
  const int count = argc > 1 ? atoi(argv[1]) : 1;
  const double seconds = argc > 2 ? atof(argv[2]) : 3;
  pthread_t* threads = calloc((size_t)count, sizeof *threads);
  struct Result* results = calloc((size_t)count, sizeof *results);
  for (int i = 0; i < count; i++) {
    pthread_create(&threads[i], NULL, spin, &results[i]);
    char name[16];
    snprintf(name, sizeof name, "spin-%02d", i);
    pthread_setname_np(threads[i], name);
  }
  struct timespec run = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
  nanosleep(&run, NULL);
  atomic_store(&stop, 1);
  for (int i = 0; i < count; i++) pthread_join(threads[i], NULL);
  for (int i = 0; i < count; i++) {
    printf("%d spin-%02d %.3f\n", (int)results[i].tid, i, results[i].cpu_ms);
  }
  return 0;
}
