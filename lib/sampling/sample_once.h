// One snapshot of a thread, now, whether it runs or sleeps: StackCopier::copy() for a thread it
// can take, else the thread's own self-sampling for one interruption. For tests, benchmarks and
// tools that want a single stack; the sampler itself never waits like this.
#ifndef INPROF_LIB_SAMPLE_ONCE_H_
#define INPROF_LIB_SAMPLE_ONCE_H_

#include <chrono>
#include <cstdint>

#include "sampling/stack_copier.h"

namespace inprof::internal {

// Fills `out` (buffer and capacity set by the caller). kTimedOut if the thread gave no snapshot
// within `timeout` (a running thread answers after an interval of its own CPU time).
CopyResult sample_once(StackCopier& copier, uint64_t tid, StackSnapshot& out,
                       std::chrono::nanoseconds timeout = std::chrono::seconds(5));

}  // namespace inprof::internal

#endif  // INPROF_LIB_SAMPLE_ONCE_H_
