// Waiting on a word of our own memory (a private futex): how the profiler's threads sleep until
// woken without holding a descriptor (an eventfd, a pipe) in the program's table.
#ifndef INPROF_PLATFORM_LINUX_FUTEX_LINUX_H_
#define INPROF_PLATFORM_LINUX_FUTEX_LINUX_H_

#include <atomic>
#include <cstdint>

namespace inprof::internal {

enum class FutexWait {
  kWoken,  // woken, or the word had already changed
  kTimedOut,
  kRefused,  // the call failed for another reason (a seccomp policy): the caller must not spin
};

// Sleeps while `word` holds `expected`, at most `timeout_ns` (relative, CLOCK_MONOTONIC).
FutexWait futex_wait(std::atomic<uint32_t>& word, uint32_t expected, uint64_t timeout_ns);
void futex_wake_all(std::atomic<uint32_t>& word);

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_FUTEX_LINUX_H_
