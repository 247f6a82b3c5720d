// A small counting filter in front of the sampled-address set: a free asks it first, and only
// when it says "maybe" probes the set. The set is large (64 Ki words by default, 512 KiB) and a
// probe into it at a random place is a cache miss on nearly every free — 9 % of an
// allocation-heavy python3.11's time. The filter is 32 KiB of byte counters that stay in cache;
// a counter counts the live sampled addresses that hash to it, so zero means "certainly not
// sampled". Counters saturate at 255 and then stay (a permanent "maybe": costs a probe, never an
// answer). No lock, no allocation; safe from any thread and from a signal handler.
#ifndef INPROF_LIB_ALLOCATIONS_PRESENCE_FILTER_H_
#define INPROF_LIB_ALLOCATIONS_PRESENCE_FILTER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace inprof::internal {

class PresenceFilter {
 public:
  static constexpr unsigned kBits = 15;
  static constexpr size_t kCounters = size_t(1) << kBits;
  static constexpr uint8_t kSaturated = 255;

  constexpr PresenceFilter() = default;
  PresenceFilter(const PresenceFilter&) = delete;
  PresenceFilter& operator=(const PresenceFilter&) = delete;

  // False: `address` is certainly not among the added ones. True: it may be.
  bool may_contain(uint64_t address) const {
    return counters_[index(address)].load(std::memory_order_relaxed) != 0;
  }

  // Before the address can be freed by anyone (i.e. before its allocation returns).
  void add(uint64_t address) {
    auto& counter = counters_[index(address)];
    uint8_t seen = counter.load(std::memory_order_relaxed);
    while (seen != kSaturated &&
           !counter.compare_exchange_weak(seen, static_cast<uint8_t>(seen + 1),
                                          std::memory_order_relaxed)) {
    }
  }

  // Once per add() of the same address, after it left the set (or failed to enter it).
  void remove(uint64_t address) {
    auto& counter = counters_[index(address)];
    uint8_t seen = counter.load(std::memory_order_relaxed);
    while (seen != kSaturated && seen != 0 &&
           !counter.compare_exchange_weak(seen, static_cast<uint8_t>(seen - 1),
                                          std::memory_order_relaxed)) {
    }
  }

  // Only while no thread adds or removes (as SampledAddressSet::reset).
  void clear() {
    for (auto& counter : counters_) counter.store(0, std::memory_order_relaxed);
  }

 private:
  static size_t index(uint64_t address) {
    return static_cast<size_t>(((address >> 4) * 0x9E3779B97F4A7C15ull) >> (64 - kBits));
  }

  std::atomic<uint8_t> counters_[kCounters] = {};
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_ALLOCATIONS_PRESENCE_FILTER_H_
