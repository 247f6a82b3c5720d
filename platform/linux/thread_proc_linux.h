// What /proc says about one thread of this process, read without keeping anything open (no
// descriptor per thread: a program with thousands of threads keeps all of its descriptors).
// Called from the sampler thread only; each call opens, reads and closes one small file (a
// ThreadSyscallFile lives for one copy).
#ifndef INPROF_PLATFORM_LINUX_THREAD_PROC_LINUX_H_
#define INPROF_PLATFORM_LINUX_THREAD_PROC_LINUX_H_

#include <time.h>

#include <cstdint>
#include <optional>

#include "owned_fd_linux.h"

namespace inprof::internal {

// The kernel's clock id for "CPU time of thread tid" (CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD_MASK),
// as glibc's pthread_getcpuclockid builds it; any thread of the process may read it or time it.
inline clockid_t thread_cpu_clock(uint64_t tid) {
  return static_cast<clockid_t>((~static_cast<clockid_t>(tid) << 3) | 6);
}

// Thread `tid`'s CPU time in nanoseconds, from its CPU clock (no /proc file involved).
inline std::optional<uint64_t> read_thread_cpu_ns(uint64_t tid) {
  timespec ts;
  if (clock_gettime(thread_cpu_clock(tid), &ts) != 0) return std::nullopt;
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// Reads /proc/self/task/TID/NAME into `buf` (NUL-terminated); the length, or -1.
ssize_t read_task_file(uint64_t tid, const char* name, char* buf, size_t size);

// The number of the process's threads as /proc/self/task's link count tells it (the kernel adds
// the count to the directory's two links: one fstat, where /proc/self/status costs 25 times as
// much), where that directory is held open (a descriptor table of the thread's own).
std::optional<uint64_t> thread_count_by_links();

// From /proc/self/task/TID/status.
struct ThreadSignalState {
  bool blocks_signal = false;       // `signal` is in the thread's blocked mask (SigBlk)
  bool signal_pending = false;      // `signal` waits in the thread's own pending set (SigPnd)
  bool seccomp = false;             // the thread runs under seccomp (strict or filter): a handler's
                                    // system calls might kill it
  uint64_t voluntary_switches = 0;  // times it went to sleep (voluntary_ctxt_switches)
};
std::optional<ThreadSignalState> read_thread_signal_state(uint64_t tid, int signal);

// From /proc/self/task/TID/syscall: where a thread that is not on a CPU stopped.
struct ThreadSyscallState {
  bool running = false;     // on a CPU now: nothing else is known
  bool in_syscall = false;  // blocked (or preempted) inside system call `number`
  int64_t number = -1;
  uint64_t first_argument = 0;  // of the system call: what it waits on, for most that wait
  uint64_t sp = 0, pc = 0;      // its user-mode stack pointer and program counter
  bool operator==(const ThreadSyscallState&) const = default;
};
std::optional<ThreadSyscallState> read_thread_syscall_state(uint64_t tid);

// Whether system call `number` puts a signal mask of its caller's choosing in place while it waits
// (sigwait and sigtimedwait unblock what they wait for; sigsuspend, pselect, ppoll, epoll_pwait,
// io_pgetevents and io_uring_enter install the mask they are given): a thread inside one shows
// that mask in its status (SigBlk), not the one it has again when it returns.
bool syscall_swaps_signal_mask(int64_t number);

// The same file held open for the length of one copy, read from its start each time: before the
// copy and after it, with one open (most of what a burst of new threads cost the sampler was
// opening /proc files).
class ThreadSyscallFile {
 public:
  explicit ThreadSyscallFile(uint64_t tid);
  std::optional<ThreadSyscallState> read();

 private:
  OwnedFd file_;
};

// From /proc/self/task/TID/stat: its scheduler state, 'R' (running or runnable), 'S', 'D'...
std::optional<char> read_thread_state(uint64_t tid);

// From /proc/self/task/TID/schedstat: nanoseconds it waited for a CPU while runnable.
std::optional<uint64_t> read_thread_cpu_wait_ns(uint64_t tid);

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_THREAD_PROC_LINUX_H_
