// Kernel sampling rings the OS refused this process, by cause, since it started. Where the kernel
// gives no ring, a busy thread is sampled by a CPU-clock timer and an idle one is asked by its
// clock every few ticks: it works, costs more with many threads, and the profile says why
// (Profile Info, symbolicate's statistics), since the cause is usually outside the program:
// another perf user of the same user holding the perf_event_mlock_kb allowance (`perf record -a`
// takes it all on a small machine), or perf_event_paranoid / seccomp forbidding perf events.
//
// Counted where a ring is asked for (platform/linux/perf_event_ring_linux.cc); zero elsewhere.
#ifndef INPROF_LIB_SAMPLING_KERNEL_RING_REFUSALS_H_
#define INPROF_LIB_SAMPLING_KERNEL_RING_REFUSALS_H_

#include <cstdint>

namespace inprof::internal {

struct KernelRingRefusals {
  // The mapping would have been charged to the program's RLIMIT_MEMLOCK (the user's perf
  // allowance was used up), or the kernel refused to lock it: given back.
  uint64_t allowance = 0;
  // perf_event_open was not permitted (perf_event_paranoid, a seccomp filter, a container).
  uint64_t permission = 0;
  // Any other refusal (no such event, out of memory, an odd kernel).
  uint64_t other = 0;
};

KernelRingRefusals kernel_ring_refusals();

}  // namespace inprof::internal

#endif  // INPROF_LIB_SAMPLING_KERNEL_RING_REFUSALS_H_
