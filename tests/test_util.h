// Helpers that keep sampling tests meaningful on an overloaded machine: they wait for work
// actually done (CPU consumed), not for wall time.
#ifndef INPROF_TESTS_TEST_UTIL_H_
#define INPROF_TESTS_TEST_UTIL_H_

#include <pthread.h>
#include <time.h>
#if defined(_WIN32)
#include <windows.h>
#endif

#include <chrono>
#include <cstdlib>
#include <thread>

namespace inprof::testing {

inline std::chrono::nanoseconds thread_cpu_time(pthread_t thread) {
#if defined(_WIN32)  // MinGW's winpthreads has no per-thread CPU clock
  FILETIME created, exited, kernel, user;
  if (!GetThreadTimes(pthread_gethandle(thread), &created, &exited, &kernel, &user)) return {};
  auto ticks = [](const FILETIME& t) {
    return (uint64_t(t.dwHighDateTime) << 32) | t.dwLowDateTime;
  };
  return std::chrono::nanoseconds((ticks(kernel) + ticks(user)) * 100);
#else
  clockid_t clock;
  timespec ts{};
  if (pthread_getcpuclockid(thread, &clock) != 0 || clock_gettime(clock, &ts) != 0) return {};
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
#endif
}

// Returns once `thread` has used `cpu` more CPU time than when called, or after `limit`.
inline void wait_for_cpu(pthread_t thread, std::chrono::milliseconds cpu,
                         std::chrono::seconds limit = std::chrono::seconds(30)) {
  const auto start_cpu = thread_cpu_time(thread);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (thread_cpu_time(thread) - start_cpu < cpu && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// The cross build's tests run under qemu-user (tests/CMakeLists.txt sets INPROF_TEST_EMULATOR).
// It delivers signals only at translation-block boundaries, so samples do not spread over every
// instruction; the few checks that depend on that, or on a qemu bug, say so and step aside.
inline const char* emulator() { return std::getenv("INPROF_TEST_EMULATOR"); }

}  // namespace inprof::testing

#endif  // INPROF_TESTS_TEST_UTIL_H_
