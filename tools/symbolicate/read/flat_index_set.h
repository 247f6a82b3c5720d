// A hash set of row indices for the profile builder's deduplication: open addressing with linear
// probing, storing only a row's index and hash. The rows themselves stay in the builder's column
// tables, which the caller's equality test reads, so no key is stored twice and nothing is
// allocated per row (std::unordered_map allocated a node per row and copied every key).
#ifndef INPROF_TOOLS_SYMBOLICATE_FLAT_INDEX_SET_H_
#define INPROF_TOOLS_SYMBOLICATE_FLAT_INDEX_SET_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace inprof::symbolicate {

class FlatIndexSet {
 public:
  // The row equal to the one looked for (same `hash`, and `equal(row)` true), or `next_row` after
  // remembering it as a new row: the caller then appends that row to its tables.
  template <typename Equal>
  uint32_t find_or_insert(uint64_t hash, uint32_t next_row, Equal&& equal) {
    if ((count_ + 1) * 4 > slots_.size() * 3) grow();
    const uint32_t tag = tag_of(hash);
    for (size_t i = position(tag);; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.tag == 0) {
        slot = {tag, next_row};
        ++count_;
        return next_row;
      }
      if (slot.tag == tag && equal(slot.row)) return slot.row;
    }
  }

 private:
  struct Slot {
    uint32_t tag;  // 0: empty; else the upper half of the hash, never 0
    uint32_t row;
  };
  // The upper half of the mixed hash: it both places a row and tells most rows apart cheaply.
  static uint32_t tag_of(uint64_t hash) {
    hash ^= hash >> 31;
    hash *= 0x9e3779b97f4a7c15ull;
    const auto tag = static_cast<uint32_t>(hash >> 32);
    return tag ? tag : 1;
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{0, 0});
    mask_ = slots_.size() - 1;
    // Placed by the tag alone (see position()), so the rows need not be hashed again.
    for (const Slot& s : old) {
      if (s.tag == 0) continue;
      size_t i = position(s.tag);
      while (slots_[i].tag != 0) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }
  size_t position(uint32_t tag) const { return tag & mask_; }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t count_ = 0;
};

// Integer keys to 32-bit values on a FlatIndexSet: the converter's caches (an address's frames,
// a function's row), which std::unordered_map made cost a node allocation and a division each.
class FlatKeyMap {
 public:
  // The value stored for `key`; if there is none, stores and returns `make()`.
  template <typename Make>
  uint32_t get_or_make(uint64_t key, Make&& make) {
    const auto next = static_cast<uint32_t>(keys_.size());
    const uint32_t row =
        index_.find_or_insert(key, next, [&](uint32_t r) { return keys_[r] == key; });
    if (row != next) return values_[row];
    const uint32_t value = make();
    keys_.push_back(key);
    values_.push_back(value);
    return value;
  }

 private:
  FlatIndexSet index_;
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> values_;
};

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_FLAT_INDEX_SET_H_
