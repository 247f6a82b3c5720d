// One thread spins; one "waker" wakes every PERIOD ms and runs blip() for BURST ms of its own CPU
// time, for SECONDS; the waker prints the CPU time it used (its own clock), which a profile must
// give back within 10 % (issue 40). Optionally IDLE more threads sleep in pthread_cond_wait.
//   bursts [burst_ms=2] [period_ms=50] [seconds=3] [idle=0]
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static atomic_int stop;
static double burst_ms = 2, period_ms = 50;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;

static double now_ms(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) void blip(void) {
  const double until = now_ms(CLOCK_THREAD_CPUTIME_ID) + burst_ms;
  volatile unsigned long x = 0;
  while (now_ms(CLOCK_THREAD_CPUTIME_ID) < until) x++;
}

__attribute__((noinline)) void spin(void) {
  volatile unsigned long x = 0;
  while (!atomic_load(&stop)) x++;
}

static void* busy(void* arg) { spin(); return arg; }

static void* waker(void* arg) {
  const double start = now_ms(CLOCK_MONOTONIC);
  double next = start;
  while (!atomic_load(&stop)) {
    blip();
    next += period_ms;
    const double wait = next - now_ms(CLOCK_MONOTONIC);
    if (wait > 0) {
      struct timespec ts = {(time_t)(wait / 1e3), (long)((wait - (time_t)(wait / 1e3) * 1e3) * 1e6)};
      nanosleep(&ts, NULL);
    }
  }
  printf("waker CPU: %.1f ms\n", now_ms(CLOCK_THREAD_CPUTIME_ID));
  return arg;
}

static void* idle(void* arg) {
  pthread_mutex_lock(&mutex);
  while (!atomic_load(&stop)) pthread_cond_wait(&never, &mutex);
  pthread_mutex_unlock(&mutex);
  return arg;
}

int main(int argc, char** argv) {
  if (argc > 1) burst_ms = atof(argv[1]);
  if (argc > 2) period_ms = atof(argv[2]);
  const double seconds = argc > 3 ? atof(argv[3]) : 3;
  const int idle_count = argc > 4 ? atoi(argv[4]) : 0;
  pthread_t b, w;
  pthread_t* idlers = calloc((size_t)idle_count + 1, sizeof *idlers);
  for (int i = 0; i < idle_count; i++) pthread_create(&idlers[i], NULL, idle, NULL);
  pthread_create(&b, NULL, busy, NULL);
  pthread_create(&w, NULL, waker, NULL);
  struct timespec run = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
  nanosleep(&run, NULL);
  atomic_store(&stop, 1);
  pthread_join(w, NULL);
  pthread_join(b, NULL);
  pthread_mutex_lock(&mutex);
  pthread_cond_broadcast(&never);
  pthread_mutex_unlock(&mutex);
  for (int i = 0; i < idle_count; i++) pthread_join(idlers[i], NULL);
  return 0;
}
