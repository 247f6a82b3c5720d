/* The least that sampling a program at 1 kHz can cost on this machine (benchmarks/accuracy/
 * overhead.py --floor): preloaded, this asks the kernel to sample the program's CPU clock every
 * INTERRUPT_FLOOR_NS (default 1 ms), inherited by every thread the program starts, and gives the
 * samples nowhere to go (an inherited per-thread event cannot have a ring): the kernel takes every
 * interrupt and drops its record. It is what inprof's busy threads pay for the kernel's interrupt,
 * without the record, the stack copy, the unwinding or the dump; inprof's cost above this one is
 * what inprof adds. (perf record without call graphs is no floor: the perf tool's
 * own start and its build-id pass at exit cost more than the sampling.) */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((constructor)) static void interrupt_floor_start(void) {
  const char* period = getenv("INTERRUPT_FLOOR_NS");
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.sample_period = period ? strtoull(period, NULL, 10) : 1000000;
  attr.sample_type = PERF_SAMPLE_IP;
  attr.inherit = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    static const char message[] = "interrupt_floor: perf_event_open failed\n";
    (void)!write(2, message, sizeof message - 1);
    _exit(125);
  }
}
