// Whether a seccomp filter applies to the calling thread. Under a filter any system call may be
// fatal (a service manager's SystemCallFilter=~@debug kills perf_event_open and process_vm_readv
// with SIGSYS): the profiler then makes none of the calls that only it needs, and gives up what
// they would have given (counted as samples given up), never the program.
#ifndef INPROF_PLATFORM_LINUX_SECCOMP_STATE_LINUX_H_
#define INPROF_PLATFORM_LINUX_SECCOMP_STATE_LINUX_H_

namespace inprof::internal {

// /proc/thread-self/status's "Seccomp:" (1: strict, 2: filter), read again at most every 10 ms
// per thread; once true, true for good (filters are never removed). A filter another thread
// applies to this one (SECCOMP_FILTER_FLAG_TSYNC) is seen within those 10 ms. Not in a signal
// handler (it opens a file).
bool seccomp_filtered();

// Whether any seccomp_filtered() call has seen a filter (no file read: any thread, any time).
bool seccomp_filter_seen();

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_SECCOMP_STATE_LINUX_H_
