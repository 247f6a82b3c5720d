// 200 threads spin; after 300 ms main prints CLOCK_MONOTONIC and calls exit(0). exit_time.py
// measures from that print to the moment the process is reaped: what exit() costs (issue 39).
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static atomic_int stop;

static void* spin(void* arg) {
  (void)arg;
  volatile unsigned long x = 0;
  while (!atomic_load(&stop)) x++;
  return NULL;
}

int main(void) {
  pthread_t threads[200];
  for (int i = 0; i < 200; i++) pthread_create(&threads[i], NULL, spin, NULL);
  struct timespec pause = {0, 300000000};
  nanosleep(&pause, NULL);
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  printf("%ld.%09ld\n", (long)now.tv_sec, now.tv_nsec);
  fflush(stdout);
  exit(0);
}
