// Takes the user's perf ring allowance (kernel.perf_event_mlock_kb), as `perf record -a` does on a
// small machine: maps perf rings, largest first, until the kernel refuses even one page (or,
// for a user allowed to lock more, until the allowance is surely used up). Prints "taken KB"
// and holds them until its standard input closes. Exit 77: perf events are not permitted here.
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int open_dummy(void) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_DUMMY;
  return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

int main(void) {
  const long page = sysconf(_SC_PAGESIZE);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  long allowance_kb = 516;
  FILE* f = fopen("/proc/sys/kernel/perf_event_mlock_kb", "r");
  if (f) {
    if (fscanf(f, "%ld", &allowance_kb) != 1) allowance_kb = 516;
    fclose(f);
  }
  const long want_kb = 2 * allowance_kb * (cpus > 0 ? cpus : 1);
  long taken_kb = 0;
  for (long pages = 1024; pages >= 1 && taken_kb < want_kb;) {
    const int fd = open_dummy();
    if (fd < 0) {
      if (taken_kb == 0) return 77;
      break;
    }
    void* m = mmap(0, (size_t)(pages + 1) * (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);  // the mapping keeps the event
    if (m == MAP_FAILED) {
      pages /= 2;
      continue;
    }
    taken_kb += (pages + 1) * page / 1024;
  }
  printf("taken %ld\n", taken_kb);
  fflush(stdout);
  char c;
  while (read(0, &c, 1) > 0) {
  }
  return 0;
}
