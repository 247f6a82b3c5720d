#include "ring_buffer.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace inprof::internal {

RingBuffer::RingBuffer(size_t capacity)
    : capacity_(std::bit_ceil(std::max<size_t>(capacity, 4096))),
      mask_(capacity_ - 1),
      words_(static_cast<uint64_t*>(std::calloc(capacity_ / 8, sizeof(uint64_t)))) {}

bool RingBuffer::write(uint8_t type, std::span<const uint8_t> payload) {
  if (payload.size() > max_payload()) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const size_t total = record_size(payload.size());
  uint64_t pos = head_.load(std::memory_order_relaxed);
  do {
    // Acquire pairs with the consumer's release: the space it freed reads as zero here.
    uint64_t tail = tail_.load(std::memory_order_acquire);
    if ((pos & kClosed) || pos + total - tail > capacity_) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
  } while (!head_.compare_exchange_weak(pos, pos + total, std::memory_order_relaxed,
                                        std::memory_order_relaxed));
  copy_in(pos + kHeaderSize, payload.data(), payload.size());
  uint64_t header = kPublished | (uint64_t(type) << 32) | payload.size();
  std::atomic_ref<uint64_t>(words_[(pos & mask_) / 8]).store(header, std::memory_order_release);
  return true;
}

bool RingBuffer::all_published() const {
  // Everything reserved has been consumed (the consumer stops at the first unpublished record).
  return (head_.load(std::memory_order_acquire) & ~kClosed) ==
         tail_.load(std::memory_order_acquire);
}

uint64_t RingBuffer::load_header(uint64_t pos) const {
  return std::atomic_ref<uint64_t>(words_[(pos & mask_) / 8]).load(std::memory_order_acquire);
}

void RingBuffer::copy_in(uint64_t pos, const uint8_t* src, size_t n) {
  auto* bytes = reinterpret_cast<uint8_t*>(words_.get());
  size_t offset = pos & mask_;
  size_t first = std::min(n, capacity_ - offset);
  std::memcpy(bytes + offset, src, first);
  std::memcpy(bytes, src + first, n - first);
}

void RingBuffer::copy_out(uint64_t pos, uint8_t* dst, size_t n) const {
  const auto* bytes = reinterpret_cast<const uint8_t*>(words_.get());
  size_t offset = pos & mask_;
  size_t first = std::min(n, capacity_ - offset);
  std::memcpy(dst, bytes + offset, first);
  std::memcpy(dst + first, bytes, n - first);
}

void RingBuffer::clear(uint64_t pos, size_t n) {
  // The header word is cleared atomically (a producer may read it concurrently only after it
  // has been reserved again, which needs tail to move first, but TSan wants the access atomic).
  std::atomic_ref<uint64_t>(words_[(pos & mask_) / 8]).store(0, std::memory_order_relaxed);
  auto* bytes = reinterpret_cast<uint8_t*>(words_.get());
  size_t offset = (pos + kHeaderSize) & mask_;
  size_t rest = n - kHeaderSize;
  size_t first = std::min(rest, capacity_ - offset);
  std::memset(bytes + offset, 0, first);
  std::memset(bytes, 0, rest - first);
}

}  // namespace inprof::internal
