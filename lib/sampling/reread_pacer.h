// How much of one CPU the sampler may spend reading again what it knew of threads that sleep:
// the stack of one found asleep somewhere new after a short wake, and the OS name of one that
// may have renamed itself. Both only keep the profile's picture up to date (where each thread
// waits, what it is called); no CPU time depends on them. 10,000 threads woken at once to end,
// each copied again where it waited for the mutex (~25 µs a copy on this VM) and its name read
// again after the kernel's records overflowed, cost the sampler a third of a CPU over a 3 s run.
// Past the share, reads wait for a later check; a thread that ends first keeps what was known.
// Charged by what each read took. Sampler thread only.
#ifndef INPROF_LIB_SAMPLING_REREAD_PACER_H_
#define INPROF_LIB_SAMPLING_REREAD_PACER_H_

#include <algorithm>
#include <cstdint>

namespace inprof::internal {

class RereadPacer {
 public:
  // Whether a read may be taken at `now`.
  bool may_read(uint64_t now) {
    // Budget unused is kept for a while only: a burst of wakes after a quiet minute is paced.
    const uint64_t earliest = now > kCreditNs ? now - kCreditNs : 0;
    next_ns_ = std::max(next_ns_, earliest);
    return next_ns_ <= now;
  }

  // A read allowed by may_read() took `took_ns` (wall time, capped: one descheduled midway).
  void charge(uint64_t took_ns) {
    const uint64_t cost = std::min(took_ns, kMostCostNs);
    next_ns_ += cost * kBudgetPerCost;
    average_ns_ = (average_ns_ * 7 + cost) / 8;
  }

  // When a thread refused a read now asks again, with `waiting` threads refused and not yet
  // read (itself included): about when the budget comes to it, within [shortest, a second].
  uint64_t retry_in_ns(uint64_t waiting, uint64_t shortest) const {
    return std::clamp(average_ns_ * kBudgetPerCost * waiting, shortest,
                      std::max(shortest, kLongestRetryNs));
  }

 private:
  static constexpr uint64_t kBudgetPerCost = 25;      // 4 % of a CPU
  static constexpr uint64_t kCreditNs = 100'000'000;  // 4 ms of reads at once (~160 copies)
  static constexpr uint64_t kLongestRetryNs = 1'000'000'000;
  static constexpr uint64_t kMostCostNs = 200'000;
  uint64_t next_ns_ = 0;
  uint64_t average_ns_ = 20'000;  // until measured
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_SAMPLING_REREAD_PACER_H_
