// Copies of a thread's stack: by the thread itself, in its sampling signal's handler (SUSPENDED:
// no allocation, no lock), and by the sampler, of a thread asleep in a system call.
//
// Every read goes through process_vm_readv on our own process: the kernel stops at the first
// unmapped page instead of faulting, so a stale table of mappings (a stack unmapped or split
// since it was read) costs a shorter copy, never a crash. Where the kernel refuses that call
// (seccomp, or an emulator without it), a thread's own copy falls back to plain loads over the
// part of the stack that is proven mapped, and other threads' stacks are not copied.
#ifndef INPROF_PLATFORM_LINUX_THREAD_STACK_COPY_LINUX_H_
#define INPROF_PLATFORM_LINUX_THREAD_STACK_COPY_LINUX_H_

#include <cstddef>
#include <cstdint>

#include "stack_regions_linux.h"
#include "unwind/stack_snapshot.h"

namespace inprof::internal {

// Bytes from `sp` to the top of the stack in `region` (which holds sp), as far as the copy may go.
size_t stack_bytes_above(const StackRegion& region, uint64_t sp);

// Copies [SP, stack top) into out->buffer, at most out->capacity bytes; sets stack_start,
// stack_size, stack_found, stack_truncated. `region` is the mapping that holds SP, or null when
// unknown: then up to out->capacity bytes are copied, as far as memory is mapped. Must run on the
// thread whose stack it is.
void copy_own_stack(StackSnapshot* out, const StackRegion* region, int pid);

// The same for another thread of this process, which must not run meanwhile (the caller checks
// that it did not). Never a plain load: without process_vm_readv nothing is copied.
void copy_other_stack(StackSnapshot* out, const StackRegion* region, int pid);

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_THREAD_STACK_COPY_LINUX_H_
