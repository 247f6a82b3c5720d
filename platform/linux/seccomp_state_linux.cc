#include "seccomp_state_linux.h"

#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "owned_fd_linux.h"

namespace inprof::internal {
namespace {

constexpr uint64_t kRecheckNs = 10000000;
std::atomic<bool> g_seen{false};

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

bool read_filtered() {
  char text[4096];
  if (read_small_file("/proc/thread-self/status", text, sizeof(text)) <= 0) {
    return true;  // cannot tell: assume the worst
  }
  const char* line = std::strstr(text, "\nSeccomp:");
  if (line == nullptr) return false;  // a kernel without seccomp
  return std::strtol(line + 9, nullptr, 10) != 0;
}

}  // namespace

bool seccomp_filtered() {
  __attribute__((tls_model("initial-exec"))) thread_local bool filtered = false;
  __attribute__((tls_model("initial-exec"))) thread_local uint64_t checked_ns = 0;
  if (filtered) return true;
  const uint64_t now = now_ns();
  if (checked_ns != 0 && now - checked_ns < kRecheckNs) return false;
  checked_ns = now;
  filtered = read_filtered();
  if (filtered) g_seen.store(true, std::memory_order_relaxed);
  return filtered;
}

bool seccomp_filter_seen() { return g_seen.load(std::memory_order_relaxed); }

}  // namespace inprof::internal
