/* The cost of an unsampled malloc+free pair (issue 24's goal: at most 5 ns more than without
 * inprof). Prints ns per pair, the best of 7 runs of 20 million pairs of 32..47 bytes. Run it
 * bare, with libinprof_allocations.so preloaded but no session, and with a session recording
 * allocations at the default rate (benchmarks/allocations/compare.sh does all three).
 * Usage: pair_cost [--retain MB] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(int argc, char** argv) {
  enum { kPairs = 20000000, kRuns = 7 };
  void* volatile sink;
  double best = 1e9;
  /* "--retain MB": first allocate MB in 64 KiB blocks, kept to the end, so that sampled blocks
   * stay live and every free looks its address up in the interposer's set (without it the set is
   * empty between samples and a free skips the lookup). */
  size_t retained_blocks = argc > 2 ? (size_t)atol(argv[2]) * 16 : 0;
  void** retained = retained_blocks ? malloc(retained_blocks * sizeof(void*)) : NULL;
  for (size_t i = 0; i < retained_blocks; ++i) retained[i] = malloc(64 << 10);
  for (int run = 0; run < kRuns; ++run) {
    const uint64_t start = now_ns();
    for (int i = 0; i < kPairs; ++i) {
      void* p = malloc(32 + (i & 15));
      sink = p;
      free(p);
    }
    const double ns = (double)(now_ns() - start) / kPairs;
    if (ns < best) best = ns;
  }
  (void)sink;
  for (size_t i = 0; i < retained_blocks; ++i) free(retained[i]);
  free(retained);
  printf("%.2f ns per malloc+free pair\n", best);
  return 0;
}
