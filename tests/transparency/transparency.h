// Small helpers shared by the transparency programs. Nothing here knows about inprof: the same
// program runs unprofiled and profiled.
#ifndef INPROF_TESTS_TRANSPARENCY_TRANSPARENCY_H_
#define INPROF_TESTS_TRANSPARENCY_TRANSPARENCY_H_

#include <time.h>

#include <cstdint>

namespace transparency {

inline uint64_t now_ns(clockid_t clock = CLOCK_MONOTONIC) {
  timespec ts;
  clock_gettime(clock, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

inline uint64_t thread_cpu_ns() { return now_ns(CLOCK_THREAD_CPUTIME_ID); }

// Burns `ms` of this thread's CPU time (not wall time: the machine may be busy).
inline void spin_cpu_us(uint64_t us) {
  const uint64_t until = thread_cpu_ns() + us * 1000;
  volatile uint64_t x = 0;
  while (thread_cpu_ns() < until) {
    for (int i = 0; i < 200; ++i) x = x + uint64_t(i);
  }
}

inline void spin_cpu_ms(uint64_t ms) { spin_cpu_us(ms * 1000); }

inline timespec to_timespec(uint64_t ns) {
  return {static_cast<time_t>(ns / 1000000000u), static_cast<long>(ns % 1000000000u)};
}

}  // namespace transparency

#endif  // INPROF_TESTS_TRANSPARENCY_TRANSPARENCY_H_
