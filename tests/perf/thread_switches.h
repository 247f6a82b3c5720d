// What /proc tells of this process's threads, for the performance-property tests (Linux only):
// wake-ups are counted as voluntary context switches, never timed.
#ifndef INPROF_TESTS_PERF_THREAD_SWITCHES_H_
#define INPROF_TESTS_PERF_THREAD_SWITCHES_H_

#include <cstdint>
#include <cstdio>

namespace inprof::testing {

// Voluntary context switches of thread `tid` of this process so far (each one a wait of its own).
inline uint64_t voluntary_switches(uint64_t tid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/task/%llu/status", (unsigned long long)tid);
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return 0;
  char line[256];
  unsigned long long value = 0;
  while (std::fgets(line, sizeof(line), f)) {
    if (std::sscanf(line, "voluntary_ctxt_switches: %llu", &value) == 1) break;
  }
  std::fclose(f);
  return value;
}

}  // namespace inprof::testing

#endif  // INPROF_TESTS_PERF_THREAD_SWITCHES_H_
