#include "session/ring_buffer.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace inprof::internal {

RingBuffer::RingBuffer(size_t capacity, WhenFull when_full)
    : capacity_(std::bit_ceil(std::max<size_t>(capacity, 4096))),
      mask_(capacity_ - 1),
      when_full_(when_full),
      words_(static_cast<uint64_t*>(large_alloc(capacity_)), FreeDeleter{true}) {}

RingBuffer::RingBuffer(std::span<uint64_t> storage, WhenFull when_full)
    : capacity_(storage.size() * 8),
      mask_(capacity_ - 1),
      when_full_(when_full),
      words_(storage.data(), FreeDeleter{false}) {}

void RingBuffer::release_drained() {
  uint64_t pos = tail_.load(std::memory_order_relaxed);
  const uint64_t end = drained_.load(std::memory_order_relaxed);
  while (pos < end) {
    const size_t total = record_size(size_of(word(pos).load(std::memory_order_relaxed)));
    clear(pos, total);
    pos += total;
  }
  tail_.store(pos, std::memory_order_release);
}

bool RingBuffer::write(uint8_t type, std::span<const uint8_t> payload) {
  if (payload.size() > max_payload()) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const size_t total = record_size(payload.size());
  uint64_t pos = head_.load(std::memory_order_relaxed);
  for (;;) {
    if (pos & kClosed) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    // Acquire pairs with the release of whoever moved the tail: the space it freed is ours to
    // write (zero again, in kDrop mode).
    const uint64_t tail = tail_.load(std::memory_order_acquire);
    if (tail > pos) {  // our view of the head is stale: others reserved and were consumed
      pos = head_.load(std::memory_order_relaxed);
      continue;
    }
    if (pos + total - tail > capacity_) {
      if (when_full_ == WhenFull::kDrop || !evict_oldest(tail)) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return false;
      }
      pos = head_.load(std::memory_order_relaxed);
      continue;
    }
    if (head_.compare_exchange_weak(pos, pos + total, std::memory_order_relaxed,
                                    std::memory_order_relaxed)) {
      break;
    }
  }
  // Orders our stores after the tail load that proved the space free: a reader that sees any of
  // them then also sees a tail past the record they overwrite (see read_retained).
  std::atomic_thread_fence(std::memory_order_release);
  copy_in(pos + kHeaderSize, payload.data(), payload.size());
  word(pos).store(make_header(pos, type, payload.size()), std::memory_order_release);
  return true;
}

bool RingBuffer::evict_oldest(uint64_t tail) {
  // A capture has yet to read it: the caller drops its own record (read_retained's guard).
  if (tail >= guarded_from_.load(std::memory_order_seq_cst)) return false;
  const uint64_t header = published_header(tail);
  if (!header) return false;  // its producer has not finished: never take space from under it
  uint64_t expected = tail;
  // Losing the race means another producer evicted it: room was made either way.
  if (tail_.compare_exchange_strong(expected, tail + record_size(size_of(header)),
                                    std::memory_order_acq_rel, std::memory_order_acquire)) {
    overwritten_.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

bool RingBuffer::all_published() const {
  const uint64_t head = head_.load(std::memory_order_acquire) & ~kClosed;
  uint64_t pos = tail_.load(std::memory_order_acquire);
  if (when_full_ == WhenFull::kDrop) {
    // The consumer took all it could.
    return std::max(pos, drained_.load(std::memory_order_relaxed)) == head;
  }
  // No consumer: walk what is held. The ring is closed, so the tail only moves if a producer
  // already inside evicts; the walk still ends at the head.
  while (pos < head) {
    const uint64_t header = published_header(pos);
    if (!header) return false;
    pos += record_size(size_of(header));
  }
  return true;
}

void RingBuffer::copy_in(uint64_t pos, const uint8_t* src, size_t n) {
  // Whole words, each stored atomically: a kOverwrite reader may be copying them right now.
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v;
    std::memcpy(&v, src + i, 8);
    word(pos + i).store(v, std::memory_order_relaxed);
  }
  if (i < n) {
    uint64_t v = 0;
    std::memcpy(&v, src + i, n - i);
    word(pos + i).store(v, std::memory_order_relaxed);
  }
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
  word(pos).store(0, std::memory_order_relaxed);
  auto* bytes = reinterpret_cast<uint8_t*>(words_.get());
  size_t offset = (pos + kHeaderSize) & mask_;
  size_t rest = n - kHeaderSize;
  size_t first = std::min(rest, capacity_ - offset);
  std::memset(bytes + offset, 0, first);
  std::memset(bytes, 0, rest - first);
}

}  // namespace inprof::internal
