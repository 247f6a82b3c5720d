// The process's writable mappings too small to be the stack of a timer-sampled thread
// (kSmallestTimerStack), as last read from /proc/self/maps. A timer is armed on a thread before
// its stack is known (its SP is learnt from its first sample); the handler of that first signal
// looks itself up here, and a thread found running on a small stack is given up at once, before
// it goes deeper where the next signal's frame would not fit.
#ifndef INPROF_PLATFORM_LINUX_SMALL_MAPPINGS_LINUX_H_
#define INPROF_PLATFORM_LINUX_SMALL_MAPPINGS_LINUX_H_

#include <cstdint>

namespace inprof::internal {

// Re-reads the mappings (the sampler, before it arms a timer on a thread of unknown stack).
// Returns whether one of them is laid out as a small thread stack (over a guard page): a thread
// whose stack is not known may then be running on it. Also true, without reading, for a second
// after a read that found small stacks (the arm waits: a sample given up, not a read of 1.5 MB at
// 10,000 threads).
bool refresh_small_mappings(uint64_t smaller_than);

// SUSPENDED: whether `address` lies in one of them; false when unsure (being rewritten).
bool in_small_mapping(uint64_t address);

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_SMALL_MAPPINGS_LINUX_H_
