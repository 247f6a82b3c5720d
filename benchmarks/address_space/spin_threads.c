// N threads spin for 300 ms without allocating; then main prints its VmPeak and VmSize (kB):
// the address space a profiling session adds to a process, by thread count (address_space.py).
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static atomic_int stop;

static void* spin(void* arg) {
  (void)arg;
  volatile unsigned long x = 0;
  while (!atomic_load(&stop)) x++;
  return NULL;
}

int main(int argc, char** argv) {
  int count = argc > 1 ? atoi(argv[1]) : 4;
  pthread_t* threads = calloc((size_t)count, sizeof *threads);
  for (int i = 0; i < count; i++) pthread_create(&threads[i], NULL, spin, NULL);
  struct timespec pause = {0, 300000000};
  nanosleep(&pause, NULL);
  char line[256];
  FILE* status = fopen("/proc/self/status", "r");
  long peak = 0, size = 0;
  while (status && fgets(line, sizeof line, status)) {
    if (strncmp(line, "VmPeak:", 7) == 0) peak = atol(line + 7);
    if (strncmp(line, "VmSize:", 7) == 0) size = atol(line + 7);
  }
  printf("%ld %ld\n", peak, size);
  atomic_store(&stop, 1);
  for (int i = 0; i < count; i++) pthread_join(threads[i], NULL);
  return 0;
}
