// The addresses of large sampled blocks still alive (small ones carry a tag instead: block_tag.h),
// so that a free of a large block can tell, in one lookup, whether it was sampled. Open addressing
// with linear probing over atomic words (0 empty, 1 a tombstone); bounded probes; no lock, no
// allocation after construction, safe from any thread and from a signal handler. The memory is
// given by the owner.
#ifndef INPROF_LIB_ALLOCATIONS_ADDRESS_SET_H_
#define INPROF_LIB_ALLOCATIONS_ADDRESS_SET_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace inprof::internal {

class SampledAddressSet {
 public:
  static constexpr uint64_t kEmpty = 0;
  static constexpr uint64_t kTombstone = 1;
  static constexpr size_t kMaxProbes = 32;

  // An empty set with no room: every insert fails, every remove misses.
  constexpr SampledAddressSet() = default;
  // `slots` words (a power of two, at least 2), owned by the caller and outliving the set's use.
  SampledAddressSet(std::atomic<uint64_t>* slots, size_t slot_count) { reset(slots, slot_count); }

  // Empties the set onto `slots` (cleared here unless `already_zero`: the owner zeroed them, e.g.
  // by dropping the pages). Only while no thread inserts or removes.
  void reset(std::atomic<uint64_t>* slots, size_t slot_count, bool already_zero = false) {
    if (!already_zero) {
      for (size_t i = 0; i < slot_count; ++i) slots[i].store(kEmpty, std::memory_order_relaxed);
    }
    mask_ = slot_count - 1;
    shift_ = 64 - log2(slot_count);
    live_.store(0, std::memory_order_relaxed);
    slots_ = slots;
  }

  // False when no slot was found within kMaxProbes (the block is then not tracked).
  bool insert(uint64_t address) {
    if (address <= kTombstone || slots_ == nullptr) return false;
    size_t i = index(address);
    for (size_t probe = 0; probe < kMaxProbes; ++probe, i = (i + 1) & mask_) {
      uint64_t seen = slots_[i].load(std::memory_order_relaxed);
      if ((seen == kEmpty || seen == kTombstone) &&
          slots_[i].compare_exchange_strong(seen, address, std::memory_order_acq_rel)) {
        live_.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
    }
    return false;
  }

  // True if `address` was in the set (it is removed).
  bool remove(uint64_t address) {
    if (address <= kTombstone || slots_ == nullptr) return false;
    size_t i = index(address);
    for (size_t probe = 0; probe < kMaxProbes; ++probe, i = (i + 1) & mask_) {
      uint64_t seen = slots_[i].load(std::memory_order_acquire);
      if (seen == kEmpty) return false;
      if (seen == address &&
          slots_[i].compare_exchange_strong(seen, kTombstone, std::memory_order_acq_rel)) {
        live_.fetch_sub(1, std::memory_order_relaxed);
        return true;
      }
    }
    return false;
  }

  // Entries in the set; while 0 a free needs no lookup. (A removal racing with reset() may leave
  // the count one low: never below 0 here.)
  uint64_t live() const {
    const int64_t n = live_.load(std::memory_order_relaxed);
    return n > 0 ? static_cast<uint64_t>(n) : 0;
  }

 private:
  static constexpr unsigned log2(size_t n) {
    unsigned bits = 0;
    while ((size_t(1) << bits) < n) ++bits;
    return bits;
  }
  size_t index(uint64_t address) const {
    return static_cast<size_t>(((address >> 4) * 0x9E3779B97F4A7C15ull) >> shift_) & mask_;
  }

  std::atomic<uint64_t>* slots_ = nullptr;
  size_t mask_ = 0;
  unsigned shift_ = 63;
  std::atomic<int64_t> live_{0};
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_ALLOCATIONS_ADDRESS_SET_H_
