// Sampling allocations by bytes (docs/design/allocations.md, section 3): each thread counts down
// an exponentially distributed number of bytes with mean R; the allocation that takes the count
// to zero or below is sampled and stands for w(s) = s / (1 - e^(-s/R)) bytes, the unbiased
// (Horvitz-Thompson) estimate. R = 1 records every allocation at its own size.
// Header-only and free of allocation and locks: the interposer calls it from inside malloc.
#ifndef INPROF_LIB_ALLOCATIONS_SAMPLING_H_
#define INPROF_LIB_ALLOCATIONS_SAMPLING_H_

#include <cmath>
#include <cstdint>

namespace inprof::internal {

// xorshift64*: a few instructions, no state beyond one word per thread.
struct AllocationRng {
  uint64_t state = 0;

  void seed(uint64_t value) { state = value ? value : 0x9E3779B97F4A7C15ull; }
  uint64_t next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1Dull;
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

// The bytes until the next sample: exponential with mean `mean_bytes` (> 1), at least 1.
inline int64_t draw_countdown(AllocationRng& rng, uint64_t mean_bytes) {
  const double bytes = std::ceil(-std::log1p(-rng.uniform()) * static_cast<double>(mean_bytes));
  if (!(bytes >= 1)) return 1;
  if (bytes > 4.0e18) return int64_t(4) << 60;
  return static_cast<int64_t>(bytes);
}

// The bytes a sampled allocation of `size` stands for, at mean `mean_bytes` (1: every
// allocation is recorded, at its size).
inline uint64_t sample_weight(uint64_t size, uint64_t mean_bytes) {
  if (mean_bytes <= 1 || size == 0) return size;
  const double s = static_cast<double>(size);
  const double p = -std::expm1(-s / static_cast<double>(mean_bytes));
  if (!(p > 0)) return size;
  return static_cast<uint64_t>(std::llround(s / p));
}

}  // namespace inprof::internal

#endif  // INPROF_LIB_ALLOCATIONS_SAMPLING_H_
