// What a sleeping thread waits on when its system call waits on a descriptor (issue 43): the
// descriptor's kind, from the link /proc/self/fd/N (readlink: no descriptor is opened, nothing
// held). Asked by the sampler thread for a thread it copied asleep, never for one it stopped.
#ifndef INPROF_PLATFORM_LINUX_WAIT_DESCRIPTOR_LINUX_H_
#define INPROF_PLATFORM_LINUX_WAIT_DESCRIPTOR_LINUX_H_

#include <cstdint>

#include "unwind/stack_snapshot.h"

namespace inprof::internal {

// Whether system call `number` (this architecture's) waits on the descriptor that is its first
// argument, of a kind the call does not say: read, recvfrom, accept, ... (not epoll_wait: its
// descriptor is an epoll set, and an event loop's thread is copied asleep there most often; a
// readlink costs the sampler a few microseconds).
bool waits_on_descriptor(int64_t number);

// What descriptor `fd` of this process is now; kDescriptorUnknown if it cannot be told (closed,
// or a seccomp filter that might refuse the call fatally).
DescriptorKind descriptor_kind(uint64_t fd);

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_WAIT_DESCRIPTOR_LINUX_H_
