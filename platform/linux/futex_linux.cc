#include "futex_linux.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace inprof::internal {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));

FutexWait futex_wait(std::atomic<uint32_t>& word, uint32_t expected, uint64_t timeout_ns) {
  const timespec timeout{static_cast<time_t>(timeout_ns / 1000000000u),
                         static_cast<long>(timeout_ns % 1000000000u)};
  const long r = syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE,
                         expected, &timeout, nullptr, 0);
  if (r == 0) return FutexWait::kWoken;
  switch (errno) {
    case EAGAIN:
    case EINTR:
      return FutexWait::kWoken;
    case ETIMEDOUT:
      return FutexWait::kTimedOut;
    default:
      return FutexWait::kRefused;
  }
}

void futex_wake_all(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

}  // namespace inprof::internal
