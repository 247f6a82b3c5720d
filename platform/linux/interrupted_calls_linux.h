// Counts, per thread, how often the sampling signal's handler ran. The system-call wrappers in
// restarted_calls_linux.cc compare it before and after a call to tell an EINTR caused by the
// profiler (resumed silently) from one caused by the program's own signals (returned as is).
#ifndef INPROF_PLATFORM_LINUX_INTERRUPTED_CALLS_LINUX_H_
#define INPROF_PLATFORM_LINUX_INTERRUPTED_CALLS_LINUX_H_

#include <cstdint>

namespace inprof::internal {

// initial-exec: readable from a signal handler without __tls_get_addr (which may allocate).
extern thread_local uint32_t t_sample_interruptions __attribute__((tls_model("initial-exec")));

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_INTERRUPTED_CALLS_LINUX_H_
