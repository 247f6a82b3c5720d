// A plain program that computes for about `argv[1]` milliseconds of CPU time (default 300) and
// prints a result that does not depend on how long that took: what the output-path tests profile.
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

uint64_t cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1000 + uint64_t(ts.tv_nsec) / 1000000;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t ms = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 300;
  const uint64_t end = cpu_ms() + ms;
  volatile uint64_t sink = 0;
  while (cpu_ms() < end) {
    for (uint64_t i = 0; i < 100000; ++i) sink = sink + i * i;
  }
  uint64_t check = 0;
  for (uint64_t i = 1; i <= 1000; ++i) check += i * i;
  std::printf("sum of squares to 1000: %llu\n", static_cast<unsigned long long>(check));
  return 7;
}
