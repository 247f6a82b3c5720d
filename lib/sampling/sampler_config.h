// What a sampler is asked to do, shared by its parts (the thread visitor, the collectors, the
// sample encoder) so that each reads the same settings without depending on the sampler itself.
#ifndef INPROF_LIB_SAMPLING_SAMPLER_CONFIG_H_
#define INPROF_LIB_SAMPLING_SAMPLER_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace inprof::internal {

struct SamplerConfig {
  uint64_t interval_ns = 1000000;
  size_t max_frames = 4096;
  size_t stack_copy_size = 64 << 10;
  uint64_t start_ns = 0;  // monotonic time of the session start; record times are relative
  std::vector<std::string> thread_filters;  // name substrings; empty: all threads
  // A self-sampled thread that runs this long without its handler answering blocks the signal.
  uint64_t answer_timeout_ns = 20000000;
  bool cpu_samples = true;  // false: threads are listed and named, never sampled

  // A monotonic time as the dump's records hold it: from the session start.
  uint64_t relative(uint64_t t) const { return t > start_ns ? t - start_ns : 0; }
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_SAMPLING_SAMPLER_CONFIG_H_
