// The profiler's own threads (writer, sampler, stopper, signal triggers), which it never samples.
// Each marks itself when it starts and is forgotten when it ends, so that a program thread given
// a recycled thread id is sampled as usual. Bounded: a thread beyond the bound is sampled.
#ifndef INPROF_LIB_PROFILER_THREADS_H_
#define INPROF_LIB_PROFILER_THREADS_H_

#include <cstdint>

namespace inprof::internal {

// Marks the calling thread, id `tid`, as the profiler's until it exits.
void mark_profiler_thread(uint64_t tid);
bool is_profiler_thread(uint64_t tid);

}  // namespace inprof::internal

#endif  // INPROF_LIB_PROFILER_THREADS_H_
