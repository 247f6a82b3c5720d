// What the sampler's ticks cost it, for the profile's account of the profiler's overhead (the
// Firefox Profiler's Profile Info, symbolicate's statistics line): how many ticks, the CPU each
// took (the sampler thread's CPU clock from the end of one tick to the end of the next: the
// tick's work and its wake-up) and the time between their starts, least and most.
//
// Written by the sampler thread only, read by the writer thread (relaxed: each figure is whole,
// a set read while a tick ends may mix two ticks).
#ifndef INPROF_LIB_TICK_OVERHEAD_H_
#define INPROF_LIB_TICK_OVERHEAD_H_

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace inprof::internal {

struct TickFigures {
  uint64_t ticks = 0;
  uint64_t cpu_min_ns = 0;
  uint64_t cpu_max_ns = 0;
  uint64_t interval_min_ns = 0;  // 0 before the second tick
  uint64_t interval_max_ns = 0;
};

class TickOverhead {
 public:
  // A tick that began at `start_ns` (monotonic) ended with the sampler's CPU clock at `cpu_ns`.
  void note(uint64_t start_ns, uint64_t cpu_ns) {
    const uint64_t cpu = cpu_ns >= last_cpu_ns_ ? cpu_ns - last_cpu_ns_ : 0;
    last_cpu_ns_ = cpu_ns;
    const uint64_t ticks = ticks_.load(std::memory_order_relaxed);
    if (ticks == 0 || cpu < cpu_min_ns_.load(std::memory_order_relaxed)) {
      cpu_min_ns_.store(cpu, std::memory_order_relaxed);
    }
    if (cpu > cpu_max_ns_.load(std::memory_order_relaxed)) {
      cpu_max_ns_.store(cpu, std::memory_order_relaxed);
    }
    if (ticks > 0 && start_ns >= last_start_ns_) {
      const uint64_t interval = start_ns - last_start_ns_;
      if (ticks == 1 || interval < interval_min_ns_.load(std::memory_order_relaxed)) {
        interval_min_ns_.store(interval, std::memory_order_relaxed);
      }
      if (interval > interval_max_ns_.load(std::memory_order_relaxed)) {
        interval_max_ns_.store(interval, std::memory_order_relaxed);
      }
    }
    last_start_ns_ = start_ns;
    ticks_.store(ticks + 1, std::memory_order_relaxed);
  }

  TickFigures figures() const {
    return {ticks_.load(std::memory_order_relaxed), cpu_min_ns_.load(std::memory_order_relaxed),
            cpu_max_ns_.load(std::memory_order_relaxed),
            interval_min_ns_.load(std::memory_order_relaxed),
            interval_max_ns_.load(std::memory_order_relaxed)};
  }

 private:
  uint64_t last_start_ns_ = 0;  // sampler thread only
  uint64_t last_cpu_ns_ = 0;    // sampler thread only; its CPU clock starts at the thread's start
  std::atomic<uint64_t> ticks_{0};
  std::atomic<uint64_t> cpu_min_ns_{0};
  std::atomic<uint64_t> cpu_max_ns_{0};
  std::atomic<uint64_t> interval_min_ns_{0};
  std::atomic<uint64_t> interval_max_ns_{0};
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_TICK_OVERHEAD_H_
