// BUSY threads spin (1 by default) and N sleep in pthread_cond_wait for SECONDS: what the
// profiler costs for threads that do not run, and for those that do (idle_cost.py).
//   idle_threads N [seconds=3] [busy=1]
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

static atomic_int stop;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;

static void* spin(void* arg) {
  volatile unsigned long x = 0;
  while (!atomic_load(&stop)) x++;
  return arg;
}

static void* idle(void* arg) {
  pthread_mutex_lock(&mutex);
  while (!atomic_load(&stop)) pthread_cond_wait(&wake, &mutex);
  pthread_mutex_unlock(&mutex);
  return arg;
}

int main(int argc, char** argv) {
  const int count = argc > 1 ? atoi(argv[1]) : 0;
  const double seconds = argc > 2 ? atof(argv[2]) : 3;
  const int busy_count = argc > 3 ? atoi(argv[3]) : 1;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 << 10);
  pthread_t* threads = calloc((size_t)count + 1, sizeof *threads);
  for (int i = 0; i < count; i++) pthread_create(&threads[i], &attr, idle, NULL);
  pthread_t* busy = calloc((size_t)busy_count + 1, sizeof *busy);
  for (int i = 0; i < busy_count; i++) pthread_create(&busy[i], NULL, spin, NULL);
  struct timespec run = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
  nanosleep(&run, NULL);
  atomic_store(&stop, 1);
  pthread_mutex_lock(&mutex);
  pthread_cond_broadcast(&wake);
  pthread_mutex_unlock(&mutex);
  for (int i = 0; i < count; i++) pthread_join(threads[i], NULL);
  for (int i = 0; i < busy_count; i++) pthread_join(busy[i], NULL);
  return 0;
}
