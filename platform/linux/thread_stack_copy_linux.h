// SUSPENDED: what a thread's signal handler does to copy the top of its own stack, for both ways
// a copy is asked for (the sampler's request, the thread's own timer). No allocation, no lock.
#ifndef INPROF_PLATFORM_LINUX_THREAD_STACK_COPY_LINUX_H_
#define INPROF_PLATFORM_LINUX_THREAD_STACK_COPY_LINUX_H_

#include <cstddef>
#include <cstdint>

#include "stack_regions_linux.h"
#include "stack_snapshot.h"

namespace inprof::internal {

// Bytes from `sp` to the top of the stack in `region` (which holds sp), as far as the copy may go.
size_t stack_bytes_above(const StackRegion& region, uint64_t sp);

// Copies [SP, stack top) into out->buffer, at most out->capacity bytes; sets stack_start,
// stack_size, stack_found, stack_truncated. `region` (null: unknown, registers only) is the
// mapping that holds SP. Must run on the thread whose stack it is.
void copy_own_stack(StackSnapshot* out, const StackRegion* region, int pid);

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_THREAD_STACK_COPY_LINUX_H_
