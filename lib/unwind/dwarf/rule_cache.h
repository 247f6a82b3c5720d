// A direct-mapped cache of unwind rules by code address. A sampled program spends its time in a
// small set of return addresses, so after warm-up almost every frame is a hit and costs a hash,
// a compare and a copy.
#ifndef INPROF_LIB_DWARF_RULE_CACHE_H_
#define INPROF_LIB_DWARF_RULE_CACHE_H_

#include <cstdint>
#include <memory>

#include "memory/large_alloc.h"
#include "unwind/dwarf/unwind_rule.h"

namespace inprof::internal {

// One entry of RuleCache; all zero bytes is an empty slot (valid false), so the cache's block,
// zero-filled by the kernel, needs no construction (large_alloc.h; tests/unit/rule_cache_test.cc).
struct RuleCacheSlot {
  uint64_t pc = 0;
  uint32_t generation = 0;
  bool valid = false;
  UnwindRule rule;
};
template <>
inline constexpr bool kZeroBytesAreValueInitialized<RuleCacheSlot> = true;

class RuleCache {
 public:
  static constexpr size_t kSlots = 1 << 13;

  // 320 KiB: from large_alloc, so that freeing it leaves malloc's thresholds alone.
  RuleCache() : slots_(make_large_array<Slot>(kSlots)) {}

  // The cached rule for `pc` under `generation`, or null.
  const UnwindRule* find(uint64_t pc, uint32_t generation) const {
    const Slot& s = slots_[index(pc)];
    return s.valid && s.pc == pc && s.generation == generation ? &s.rule : nullptr;
  }
  void insert(uint64_t pc, uint32_t generation, const UnwindRule& rule) {
    Slot& s = slots_[index(pc)];
    s = Slot{pc, generation, true, rule};
  }

  uint64_t hits = 0;
  uint64_t misses = 0;

 private:
  using Slot = RuleCacheSlot;
  static size_t index(uint64_t pc) {
    return static_cast<size_t>((pc * 0x9E3779B97F4A7C15ull) >> (64 - 13));
  }
  LargeArray<Slot> slots_;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_DWARF_RULE_CACHE_H_
