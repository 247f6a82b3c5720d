/* A program that leaves without running any exit code of the profiler (lifeboat test):
 *   unflushed_exit MS HOW
 * computes for MS ms of CPU, prints that CPU (µs) and the number of descriptors it has open,
 * then leaves as HOW says: "_exit" (_exit(0)), "kill" (SIGKILL to itself), "fork" (a child
 * made by fork() computes MS ms too and leaves by _exit; the parent waits, then _exit), "exec"
 * (execs itself as "MS _exit"). */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long cpu_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int open_descriptors(void) {
  int n = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  for (struct dirent* e; (e = readdir(dir)) != NULL;) n += e->d_name[0] != '.';
  closedir(dir);
  return n - 1; /* the directory's own */
}

static __attribute__((noinline)) void compute(long long ms) {
  const long long end = cpu_us() + ms * 1000;
  volatile unsigned long long sink = 0;
  while (cpu_us() < end) {
    for (unsigned long long i = 0; i < 100000; ++i) sink = sink + i * i;
  }
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: unflushed_exit MS _exit|kill|fork|exec\n");
    return 2;
  }
  const long long ms = atoll(argv[1]);
  const char* how = argv[2];
  printf("descriptors %d\n", open_descriptors());
  const long long start = cpu_us();
  compute(ms);
  if (strcmp(how, "fork") == 0) {
    fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
      compute(ms);
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
  }
  printf("cpu_us %lld\n", cpu_us() - start);
  fflush(stdout);
  if (strcmp(how, "kill") == 0) kill(getpid(), SIGKILL);
  if (strcmp(how, "exec") == 0) {
    char* args[] = {argv[0], argv[1], "_exit", NULL};
    execv("/proc/self/exe", args);
  }
  _exit(0);
}
