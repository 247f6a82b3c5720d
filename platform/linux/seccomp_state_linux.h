// Whether a seccomp filter applies to the calling thread. Under a filter any system call may be
// fatal (a service manager's SystemCallFilter=~@debug kills perf_event_open and process_vm_readv
// with SIGSYS): the profiler then makes none of the calls that only it needs, and gives up what
// they would have given (counted as samples given up), never the program.
#ifndef INPROF_PLATFORM_LINUX_SECCOMP_STATE_LINUX_H_
#define INPROF_PLATFORM_LINUX_SECCOMP_STATE_LINUX_H_

namespace inprof::internal {

// The calling thread's mode as prctl(PR_GET_SECCOMP) says it now, asked before each call that may
// be fatal: a filter another thread applies to this one (SECCOMP_FILTER_FLAG_TSYNC) is seen at
// the next call, not up to 10 ms later as when /proc/thread-self/status was read (8 us a read).
// Once true, true for good (filters are never removed) and never asked again. A prctl refused
// (a filter answering errors) counts as a filter. What remains: a filter installed between the
// check and the call, and one that kills prctl itself.
bool seccomp_filtered();

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_SECCOMP_STATE_LINUX_H_
