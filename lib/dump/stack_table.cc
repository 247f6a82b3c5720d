#include "dump/stack_table.h"

#include <algorithm>
#include <cstring>

#include "dump/dump_records.h"

namespace inprof::internal {
namespace {

// Labels and candidates make a stack's bytes more than its frames': a bound of their own.
constexpr size_t kMaxStackBytes = 16u << 20;

// Eight bytes at a time: a stack is 50–300 bytes and every sample's stack is hashed.
uint64_t hash_bytes(std::span<const uint8_t> bytes) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;
  uint64_t h = bytes.size() * kMul;
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    h = (h ^ word) * kMul;
    h ^= h >> 29;
  }
  uint64_t tail = 0;
  if (i < bytes.size()) std::memcpy(&tail, bytes.data() + i, bytes.size() - i);
  h = (h ^ tail) * kMul;
  return h ^ (h >> 32);
}

}  // namespace

StackTable::Found StackTable::find_or_add(std::span<const uint8_t> stack, size_t frame_count) {
  const uint64_t hash = hash_bytes(stack);
  if (slots_.empty()) grow_slots();
  const size_t mask = slots_.size() - 1;
  size_t i = hash & mask;
  for (; slots_[i] != 0; i = (i + 1) & mask) {
    const Entry& e = entries_[slots_[i] - 1];
    if (e.hash == hash && e.size == stack.size() &&
        std::memcmp(bytes_.data() + e.offset, stack.data(), stack.size()) == 0) {
      return Found{slots_[i] - 1, false, false};
    }
  }
  if (entries_.size() >= kMaxStacksPerChunk || frames_ + frame_count > kMaxStackFramesPerChunk ||
      bytes_.size() + stack.size() > kMaxStackBytes) {
    return Found{0, false, true};
  }
  const auto id = static_cast<uint32_t>(entries_.size());
  entries_.push_back(
      Entry{hash, static_cast<uint32_t>(bytes_.size()), static_cast<uint32_t>(stack.size())});
  bytes_.insert(bytes_.end(), stack.begin(), stack.end());
  frames_ += frame_count;
  slots_[i] = id + 1;
  if (entries_.size() * 2 > slots_.size()) grow_slots();  // keep probes short: at most half full
  return Found{id, true, false};
}

void StackTable::grow_slots() {
  slots_.assign(std::max<size_t>(slots_.size() * 2, 256), 0);
  const size_t mask = slots_.size() - 1;
  for (size_t id = 0; id < entries_.size(); ++id) {
    size_t i = entries_[id].hash & mask;
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = static_cast<uint32_t>(id + 1);
  }
}

void StackTable::clear() {
  std::fill(slots_.begin(), slots_.end(), 0);
  entries_.clear();
  bytes_.clear();
  frames_ = 0;
}

}  // namespace inprof::internal
