/* The least that sampling a program at 1 kHz can cost on this machine (benchmarks/accuracy/
 * overhead.py --floor): preloaded, this asks the kernel to sample the program's CPU clock every
 * INTERRUPT_FLOOR_NS (default 1 ms), inherited by every thread the program starts, and gives the
 * samples nowhere to go (an inherited per-thread event cannot have a ring): the kernel takes every
 * interrupt and drops its record. It is what inprof's busy threads pay for the kernel's interrupt,
 * without the record, the stack copy, the unwinding or the dump; inprof's cost above this one is
 * what inprof adds.
 *
 * INTERRUPT_FLOOR_STACK=BYTES adds the kernel's copy of the registers and BYTES of the user stack
 * into a ring, as inprof's rings get, for the program's first thread only (an inherited event
 * cannot have a ring); a thread of this library empties the ring every 4 ms without reading it.
 * For single-threaded programs: the floor of the method, before inprof's unwinding and dump.
 * (perf record without call graphs is no floor: the perf tool's
 * own start and its build-id pass at exit cost more than the sampling.) */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static struct perf_event_mmap_page* g_ring;

static void* empty_the_ring(void* unused) {
  (void)unused;
  for (;;) {
    const struct timespec four_ms = {0, 4000000};
    nanosleep(&four_ms, NULL);
    __atomic_store_n(&g_ring->data_tail, __atomic_load_n(&g_ring->data_head, __ATOMIC_ACQUIRE),
                     __ATOMIC_RELEASE);
  }
  return NULL;
}

static void fail(const char* message) {
  (void)!write(2, message, strlen(message));
  _exit(125);
}

__attribute__((constructor)) static void interrupt_floor_start(void) {
  const char* period = getenv("INTERRUPT_FLOOR_NS");
  const char* stack = getenv("INTERRUPT_FLOOR_STACK");
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.sample_period = period ? strtoull(period, NULL, 10) : 1000000;
  attr.sample_type = PERF_SAMPLE_IP;
  attr.inherit = stack == NULL;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  if (stack != NULL) {
    attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER |
                       PERF_SAMPLE_STACK_USER;
    attr.sample_regs_user = (1u << 6) | (1u << 7) | (1u << 8); /* x86-64 bp, sp, ip */
    attr.sample_stack_user = (uint32_t)strtoul(stack, NULL, 10) & ~7u;
  }
  const int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) fail("interrupt_floor: perf_event_open failed\n");
  if (stack == NULL) return;
  const long page = sysconf(_SC_PAGESIZE);
  g_ring = mmap(NULL, (size_t)page * 65, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (g_ring == MAP_FAILED) fail("interrupt_floor: mmap of the ring failed\n");
  pthread_t thread;
  if (pthread_create(&thread, NULL, empty_the_ring, NULL) != 0) {
    fail("interrupt_floor: no thread\n");
  }
}
