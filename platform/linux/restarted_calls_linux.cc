// Sleeping system calls that the sampling signal must not cut short.
//
// Linux restarts most interrupted system calls for a SA_RESTART handler, but never nanosleep,
// clock_nanosleep, poll, ppoll, select, pselect, epoll_wait, sigtimedwait, pause or a timed
// futex wait (sem_timedwait, sem_clockwait): after any
// handler they fail with EINTR (or return a shortened sleep). A program that samples itself
// must not change what its threads see, so these wrappers, which the library exports in place of
// libc's, resume a call when the only thing that interrupted it was the profiler's signal,
// with the time that was left. An EINTR from any other signal is returned as before.
//
// Limits: calls made inside libc itself (not through the PLT) and raw syscall(2) (a timed
// FUTEX_WAIT made directly) are not covered; if the profiler's signal and another one interrupt
// the same call, it is resumed.
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>

#include "interrupted_calls_linux.h"

#define INPROF_EXPORT extern "C" __attribute__((visibility("default")))

namespace inprof::internal {

thread_local uint32_t t_sample_interruptions __attribute__((tls_model("initial-exec"))) = 0;

namespace {

// libc's own implementation of `name`, found once.
template <typename Fn>
Fn next_definition(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

#define REAL(name)                                                           \
  static const auto real_##name = next_definition<decltype(&::name)>(#name); \
  if (real_##name == nullptr) {                                              \
    errno = ENOSYS;                                                          \
    return -1;                                                               \
  }

int64_t monotonic_now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// For calls with a millisecond timeout (-1: none): the time left until `deadline`.
int remaining_ms(int timeout_ms, int64_t deadline) {
  if (timeout_ms < 0) return -1;
  const int64_t left = deadline - monotonic_now_ns();
  return left <= 0 ? 0 : static_cast<int>((left + 999999) / 1000000);
}

bool interrupted_by_us(int result, uint32_t before) {
  return result == -1 && errno == EINTR && t_sample_interruptions != before;
}

}  // namespace
}  // namespace inprof::internal

using inprof::internal::interrupted_by_us;
using inprof::internal::monotonic_now_ns;
using inprof::internal::next_definition;
using inprof::internal::remaining_ms;
using inprof::internal::t_sample_interruptions;

INPROF_EXPORT int nanosleep(const timespec* request, timespec* remaining) {
  REAL(nanosleep);
  timespec left = *request, rest{};
  for (;;) {
    const uint32_t before = t_sample_interruptions;
    const int r = real_nanosleep(&left, &rest);
    if (!interrupted_by_us(r, before)) {
      if (r != 0 && remaining) *remaining = rest;
      return r;
    }
    left = rest;
  }
}

INPROF_EXPORT int clock_nanosleep(clockid_t clock, int flags, const timespec* request,
                                  timespec* remaining) {
  static const auto real = next_definition<decltype(&::clock_nanosleep)>("clock_nanosleep");
  if (real == nullptr) return ENOSYS;
  timespec left = *request, rest{};
  for (;;) {
    const uint32_t before = t_sample_interruptions;
    const int r = real(clock, flags, &left, &rest);  // returns the error, not -1
    if (r != EINTR || t_sample_interruptions == before) {
      if (r == EINTR && remaining && !(flags & TIMER_ABSTIME)) *remaining = rest;
      return r;
    }
    if (!(flags & TIMER_ABSTIME)) left = rest;  // an absolute deadline stays as it is
  }
}

INPROF_EXPORT int usleep(useconds_t usec) {
  timespec t{static_cast<time_t>(usec / 1000000), static_cast<long>(usec % 1000000) * 1000};
  return nanosleep(&t, nullptr);
}

INPROF_EXPORT unsigned int sleep(unsigned int seconds) {
  timespec t{static_cast<time_t>(seconds), 0}, rest{};
  if (nanosleep(&t, &rest) == 0) return 0;
  return static_cast<unsigned>(rest.tv_sec + (rest.tv_nsec > 0 ? 1 : 0));
}

INPROF_EXPORT int poll(pollfd* fds, nfds_t count, int timeout_ms) {
  REAL(poll);
  const int64_t deadline = monotonic_now_ns() + int64_t(timeout_ms) * 1000000;
  int timeout = timeout_ms;
  for (;;) {
    const uint32_t before = t_sample_interruptions;
    const int r = real_poll(fds, count, timeout);
    if (!interrupted_by_us(r, before)) return r;
    timeout = remaining_ms(timeout_ms, deadline);
  }
}

INPROF_EXPORT int ppoll(pollfd* fds, nfds_t count, const timespec* timeout, const sigset_t* mask) {
  REAL(ppoll);
  const int64_t deadline =
      timeout ? monotonic_now_ns() + timeout->tv_sec * 1000000000 + timeout->tv_nsec : 0;
  timespec left = timeout ? *timeout : timespec{};
  for (;;) {
    const uint32_t before = t_sample_interruptions;
    const int r = real_ppoll(fds, count, timeout ? &left : nullptr, mask);
    if (!interrupted_by_us(r, before)) return r;
    if (timeout) {
      int64_t ns = deadline - monotonic_now_ns();
      if (ns < 0) ns = 0;
      left = {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    }
  }
}

INPROF_EXPORT int select(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds,
                         timeval* timeout) {
  REAL(select);
  // After EINTR the sets are unspecified: keep the caller's to try again with them.
  fd_set r0, w0, e0;
  if (readfds) r0 = *readfds;
  if (writefds) w0 = *writefds;
  if (exceptfds) e0 = *exceptfds;
  for (;;) {
    const uint32_t before = t_sample_interruptions;
    const int r = real_select(nfds, readfds, writefds, exceptfds, timeout);  // Linux updates
    if (!interrupted_by_us(r, before)) return r;                             // the timeout
    if (readfds) *readfds = r0;
    if (writefds) *writefds = w0;
    if (exceptfds) *exceptfds = e0;
  }
}

INPROF_EXPORT int pselect(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds,
                          const timespec* timeout, const sigset_t* mask) {
  REAL(pselect);
  fd_set r0, w0, e0;
  if (readfds) r0 = *readfds;
  if (writefds) w0 = *writefds;
  if (exceptfds) e0 = *exceptfds;
  const int64_t deadline =
      timeout ? monotonic_now_ns() + timeout->tv_sec * 1000000000 + timeout->tv_nsec : 0;
  timespec left = timeout ? *timeout : timespec{};
  for (;;) {
    const uint32_t before = t_sample_interruptions;
    const int r = real_pselect(nfds, readfds, writefds, exceptfds, timeout ? &left : nullptr, mask);
    if (!interrupted_by_us(r, before)) return r;
    if (readfds) *readfds = r0;
    if (writefds) *writefds = w0;
    if (exceptfds) *exceptfds = e0;
    if (timeout) {
      int64_t ns = deadline - monotonic_now_ns();
      if (ns < 0) ns = 0;
      left = {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    }
  }
}

INPROF_EXPORT int epoll_wait(int epfd, epoll_event* events, int max, int timeout_ms) {
  REAL(epoll_wait);
  const int64_t deadline = monotonic_now_ns() + int64_t(timeout_ms) * 1000000;
  int timeout = timeout_ms;
  for (;;) {
    const uint32_t before = t_sample_interruptions;
    const int r = real_epoll_wait(epfd, events, max, timeout);
    if (!interrupted_by_us(r, before)) return r;
    timeout = remaining_ms(timeout_ms, deadline);
  }
}

INPROF_EXPORT int epoll_pwait(int epfd, epoll_event* events, int max, int timeout_ms,
                              const sigset_t* mask) {
  REAL(epoll_pwait);
  const int64_t deadline = monotonic_now_ns() + int64_t(timeout_ms) * 1000000;
  int timeout = timeout_ms;
  for (;;) {
    const uint32_t before = t_sample_interruptions;
    const int r = real_epoll_pwait(epfd, events, max, timeout, mask);
    if (!interrupted_by_us(r, before)) return r;
    timeout = remaining_ms(timeout_ms, deadline);
  }
}

INPROF_EXPORT int sigtimedwait(const sigset_t* set, siginfo_t* info, const timespec* timeout) {
  REAL(sigtimedwait);
  const int64_t deadline =
      timeout ? monotonic_now_ns() + timeout->tv_sec * 1000000000 + timeout->tv_nsec : 0;
  timespec left = timeout ? *timeout : timespec{};
  for (;;) {
    const uint32_t before = t_sample_interruptions;
    const int r = real_sigtimedwait(set, info, timeout ? &left : nullptr);
    if (!interrupted_by_us(r, before)) return r;
    if (timeout) {
      int64_t ns = deadline - monotonic_now_ns();
      if (ns < 0) ns = 0;
      left = {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    }
  }
}

INPROF_EXPORT int sigwaitinfo(const sigset_t* set, siginfo_t* info) {
  return sigtimedwait(set, info, nullptr);
}

INPROF_EXPORT int pause(void) {
  REAL(pause);
  for (;;) {
    const uint32_t before = t_sample_interruptions;
    const int r = real_pause();
    if (!interrupted_by_us(r, before)) return r;
  }
}

// Semaphore waits with a deadline: absolute, so a resumed wait keeps the same one.
INPROF_EXPORT int sem_timedwait(sem_t* sem, const timespec* deadline) {
  REAL(sem_timedwait);
  for (;;) {
    const uint32_t before = t_sample_interruptions;
    const int r = real_sem_timedwait(sem, deadline);
    if (!interrupted_by_us(r, before)) return r;
  }
}

INPROF_EXPORT int sem_clockwait(sem_t* sem, clockid_t clock, const timespec* deadline) {
  REAL(sem_clockwait);
  for (;;) {
    const uint32_t before = t_sample_interruptions;
    const int r = real_sem_clockwait(sem, clock, deadline);
    if (!interrupted_by_us(r, before)) return r;
  }
}
