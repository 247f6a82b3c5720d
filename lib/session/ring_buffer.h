// A bounded, lock-free, multi-producer ring of variable-size records.
//
// Producers (the sampler, and marker writers on any thread) reserve space with one CAS and publish
// a record by storing its header last. Two ways to run when the ring is full:
//
// - kDrop (streaming): one consumer, the writer thread, takes records in reservation order and
//   frees their space; a record that finds no room is dropped and counted.
// - kOverwrite (flight recorder): there is no consumer; a producer that finds no room evicts the
//   oldest published records. Readers (a capture, a crash handler) copy what the ring holds while
//   producers go on, and keep a record only if no producer could have overwritten it during the
//   copy, so a reader never sees a half-written or half-overwritten record.
//
// Memory is bounded by the capacity either way.
#ifndef INPROF_LIB_RING_BUFFER_H_
#define INPROF_LIB_RING_BUFFER_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "memory/large_alloc.h"

namespace inprof::internal {

class RingBuffer {
 public:
  enum class WhenFull { kDrop, kOverwrite };

  // `capacity` is rounded up to a power of two, at least 4 KiB.
  explicit RingBuffer(size_t capacity, WhenFull when_full = WhenFull::kDrop);
  // In memory the caller owns and keeps mapped for the ring's life (a lifeboat's, lifeboat.h):
  // zeroed, 8-byte aligned, a power of two of at least 4 KiB bytes.
  RingBuffer(std::span<uint64_t> storage, WhenFull when_full);
  RingBuffer(const RingBuffer&) = delete;
  RingBuffer& operator=(const RingBuffer&) = delete;

  // Largest payload a single record can carry.
  size_t max_payload() const { return std::min(capacity_ / 4, kMaxPayloadField); }
  size_t capacity() const { return capacity_; }
  WhenFull when_full() const { return when_full_; }

  // Copies one record in. Lock-free and allocation-free; callable from any thread (and from a
  // signal handler). Returns false (and counts a drop) when there is no room — in kOverwrite mode
  // only when the oldest record is still being written — or once the ring is closed.
  bool write(uint8_t type, std::span<const uint8_t> payload);

  // Refuses every later write. Records already reserved are still published; `all_published()`
  // tells when the last of them is, after which the storage may be released. A writer that
  // raced with close() touches only this object, never the storage: keep the object alive.
  void close() { head_.fetch_or(kClosed, std::memory_order_acq_rel); }
  bool all_published() const;
  void release_storage() { words_.reset(); }

  // Where the next record will be reserved. A producer that pushed elsewhere (say, a thread-start
  // record into the metadata queue) before writing here is visible to whoever read a position
  // past its record: consumers read this first, take the other queue, then drain `until` it, so
  // a sample never reaches the dump before what it refers to.
  uint64_t reserved_end() const { return head_.load(std::memory_order_acquire) & ~kClosed; }
  // kDrop mode: bytes reserved and not yet drained (an estimate while producers write).
  uint64_t held_bytes() const {
    const uint64_t tail = tail_.load(std::memory_order_acquire);
    const uint64_t head = reserved_end();
    return head > tail ? head - tail : 0;
  }

  // kDrop mode, consumer side (one thread at a time): hands every published record before
  // `until`, in order, to `fn(type, payload)` and frees its space. A record still being written
  // stops the drain; it is delivered next time. Returns the number of records delivered.
  template <typename Fn>
  size_t drain(Fn&& fn, uint64_t until = UINT64_MAX);
  // kDrop mode, consumer side, for a consumer that must be able to take the same records again
  // until they are safely elsewhere (a lifeboat's ring, read again if the process dies): hands
  // records on as drain() does but keeps their space, until release_drained(). `fn` may call
  // release_drained() itself: the record it was given is then released too.
  template <typename Fn>
  size_t drain_held(Fn&& fn, uint64_t until = UINT64_MAX);
  // Where the next record drain_held() delivers begins: what came before it was delivered.
  uint64_t drained_to() const {
    return std::max(drained_.load(std::memory_order_relaxed),
                    tail_.load(std::memory_order_relaxed));
  }
  // Frees the space of every record drain_held() delivered.
  void release_drained();

  // A ring's storage as a dead process left it (a lifeboat's, read by the process that started
  // it): hands each record published at `from` and after, in order, to `fn(type, payload)`,
  // until the first place no record was published for. Bounded by the storage; trusts nothing
  // in it. Returns the number of records delivered and, in `*end`, where the walk stopped.
  template <typename Fn>
  static size_t read_image(std::span<const uint64_t> storage, uint64_t from, Fn&& fn,
                           uint64_t* end = nullptr);

  // kOverwrite mode, reader side (any thread, concurrently with producers and other readers; the
  // ring is not changed): copies each record it holds, oldest first, into `scratch` (at least
  // max_payload() bytes, rounded up to 8) and hands it to `fn(type, payload)` once the copy is
  // known to be intact. Records evicted while the reader runs are skipped. Stops at a record still
  // being written, or at `until` (or the head as it was when the read began, if that comes first).
  // Allocation-free and lock-free,
  // so a crash handler may call it. Returns the number of records delivered.
  // `guard` (one such reader at a time: captures, which are serialised): producers may not evict
  // a record this reader has not yet passed; they drop their own record instead (counted, as any
  // drop), so that what the reader delivers is one unbroken range. Unguarded, a reader overtaken
  // by the evictions resumes at the oldest record left: a hole in the middle of what it delivered,
  // which no counter stated (a capture read slowly while the sampler kept writing, under qemu).
  template <typename Fn>
  size_t read_retained(std::span<uint8_t> scratch, Fn&& fn, uint64_t until = UINT64_MAX,
                       bool guard = false) const;

  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  // kOverwrite mode: records evicted to make room for newer ones.
  uint64_t overwritten() const { return overwritten_.load(std::memory_order_relaxed); }

 private:
  // Header word: payload size in bits 0..23, type in bits 24..31, a tag of the record's position in
  // bits 32..62 and bit 63 set once published. The tag tells a header written for this position
  // from a stale one left by an earlier lap around the ring (kOverwrite never clears space).
  static constexpr uint64_t kPublished = uint64_t(1) << 63;
  static constexpr uint64_t kClosed = uint64_t(1) << 63;  // in head_
  static constexpr size_t kHeaderSize = 8;
  static constexpr size_t kMaxPayloadField = (size_t(1) << 24) - 8;

  static size_t record_size(size_t payload) { return kHeaderSize + ((payload + 7) & ~size_t(7)); }
  static uint64_t tag_of(uint64_t pos) { return (pos >> 3) & 0x7fffffffu; }
  static uint64_t make_header(uint64_t pos, uint8_t type, size_t size) {
    return kPublished | (tag_of(pos) << 32) | (uint64_t(type) << 24) | size;
  }
  // The header at `pos` if it was published for that very position, else 0.
  uint64_t published_header(uint64_t pos) const {
    const uint64_t h = word(pos).load(std::memory_order_acquire);
    return (h & kPublished) && ((h >> 32) & 0x7fffffffu) == tag_of(pos) ? h : 0;
  }
  static size_t size_of(uint64_t header) { return header & 0xffffffu; }
  static uint8_t type_of(uint64_t header) { return (header >> 24) & 0xff; }

  std::atomic_ref<uint64_t> word(uint64_t pos) const {
    return std::atomic_ref(words_[(pos & mask_) / 8]);
  }
  bool evict_oldest(uint64_t tail);
  // Consumer side: the payload of the record at `pos`, in place, or copied into scratch_ where it
  // wraps around the end.
  std::span<const uint8_t> consumer_payload(uint64_t pos, size_t size) {
    const size_t offset = (pos + kHeaderSize) & mask_;
    if (offset + size <= capacity_) {
      return {reinterpret_cast<const uint8_t*>(words_.get()) + offset, size};
    }
    scratch_.resize(size);
    copy_out(pos + kHeaderSize, scratch_.data(), size);
    return scratch_;
  }
  void copy_in(uint64_t pos, const uint8_t* src, size_t n);
  void copy_out(uint64_t pos, uint8_t* dst, size_t n) const;
  void clear(uint64_t pos, size_t n);

  size_t capacity_;
  size_t mask_;
  WhenFull when_full_;
  // 8-byte aligned storage, accessed a word at a time through atomic_ref where producers and
  // readers may meet. large_alloc: a large block comes zeroed from the kernel page by page,
  // instead of being cleared up front by start(), and freeing it leaves malloc's thresholds as the
  // program set them (large_alloc.h).
  struct FreeDeleter {
    bool owned;  // false: the storage was handed in (a lifeboat's)
    void operator()(uint64_t* p) const {
      if (owned) large_free(p);
    }
  };
  std::unique_ptr<uint64_t[], FreeDeleter> words_;
  alignas(64) std::atomic<uint64_t> head_{0};  // next byte to reserve
  alignas(64) std::atomic<uint64_t> tail_{0};  // oldest byte still held
  // drain_held(): the end of what it delivered (the consumer's own; tail_ stays behind).
  std::atomic<uint64_t> drained_{0};
  alignas(64) std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> overwritten_{0};
  // The oldest record a guarded reader still has to read (kNoGuard: none reads).
  static constexpr uint64_t kNoGuard = UINT64_MAX;
  mutable std::atomic<uint64_t> guarded_from_{kNoGuard};
  ByteBuffer scratch_;  // consumer only: a payload that wraps around the end (large_alloc.h)
};

template <typename Fn>
size_t RingBuffer::drain(Fn&& fn, uint64_t until) {
  size_t delivered = 0;
  uint64_t tail = tail_.load(std::memory_order_relaxed);
  while (tail < until) {
    const uint64_t header = published_header(tail);
    if (!header) break;
    const size_t size = size_of(header);
    const size_t total = record_size(size);
    const std::span<const uint8_t> payload = consumer_payload(tail, size);
    fn(type_of(header), payload);
    // Producers may reuse the space only once it is zero again: a header there must read as
    // unpublished until its writer publishes it.
    clear(tail, total);
    tail += total;
    ++delivered;
    // Publishing the freed space once per batch (or per 64 KiB) keeps the line producers read
    // on every write from bouncing between cores at every record.
    if (tail - tail_.load(std::memory_order_relaxed) >= (64u << 10)) {
      tail_.store(tail, std::memory_order_release);
    }
  }
  tail_.store(tail, std::memory_order_release);
  return delivered;
}

template <typename Fn>
size_t RingBuffer::drain_held(Fn&& fn, uint64_t until) {
  size_t delivered = 0;
  uint64_t pos = drained_to();
  while (pos < until) {
    const uint64_t header = published_header(pos);
    if (!header) break;
    const size_t size = size_of(header);
    const std::span<const uint8_t> payload = consumer_payload(pos, size);
    // Before fn: a release inside it covers this record.
    const uint64_t next = pos + record_size(size);
    drained_.store(next, std::memory_order_relaxed);
    fn(type_of(header), payload);
    ++delivered;
    pos = std::max(next, tail_.load(std::memory_order_relaxed));
  }
  drained_.store(pos, std::memory_order_relaxed);
  return delivered;
}

template <typename Fn>
size_t RingBuffer::read_image(std::span<const uint64_t> storage, uint64_t from, Fn&& fn,
                              uint64_t* end) {
  const size_t capacity = storage.size() * 8;
  size_t delivered = 0;
  uint64_t pos = from & ~uint64_t(7);
  if (capacity < 4096 || (capacity & (capacity - 1)) != 0) {
    if (end) *end = pos;
    return 0;
  }
  const size_t mask = capacity - 1;
  const size_t max_payload = std::min(capacity / 4, kMaxPayloadField);
  const auto* bytes = reinterpret_cast<const uint8_t*>(storage.data());
  std::vector<uint8_t> payload;
  while (pos - from < capacity) {
    const uint64_t h = storage[(pos & mask) / 8];
    if (!(h & kPublished) || ((h >> 32) & 0x7fffffffu) != tag_of(pos)) break;
    const size_t size = size_of(h);
    if (size > max_payload || pos + record_size(size) - from > capacity) break;
    payload.resize(size);
    const size_t offset = (pos + kHeaderSize) & mask;
    const size_t first = std::min(size, capacity - offset);
    std::memcpy(payload.data(), bytes + offset, first);
    std::memcpy(payload.data() + first, bytes, size - first);
    fn(type_of(h), std::span<const uint8_t>(payload));
    ++delivered;
    pos += record_size(size);
  }
  if (end) *end = pos;
  return delivered;
}

template <typename Fn>
size_t RingBuffer::read_retained(std::span<uint8_t> scratch, Fn&& fn, uint64_t until,
                                 bool guard) const {
  if (!words_ || scratch.size() < ((max_payload() + 7) & ~size_t(7))) return 0;
  size_t delivered = 0;
  const uint64_t head = std::min(reserved_end(), until);
  uint64_t pos = tail_.load(std::memory_order_acquire);
  // Published before the record at `pos` is looked at; a producer that evicted it before seeing
  // the guard is caught below (the tail passed `pos`) before anything was delivered from it.
  const auto hold_from = [&](uint64_t from) {
    if (guard) guarded_from_.store(from, std::memory_order_seq_cst);
  };
  struct Release {
    const RingBuffer* ring;
    bool guard;
    ~Release() {
      if (guard) ring->guarded_from_.store(kNoGuard, std::memory_order_seq_cst);
    }
  } release{this, guard};
  hold_from(pos);
  while (pos < head) {
    const uint64_t header = published_header(pos);
    if (!header) {
      // Either still being written (stop: what follows is newer than the read's start), or
      // evicted and reused since we looked at the tail (resume at the oldest record held).
      const uint64_t tail = tail_.load(std::memory_order_acquire);
      if (tail <= pos) break;
      pos = tail;
      hold_from(pos);
      continue;
    }
    const size_t size = size_of(header);
    // Word-wise atomic loads: a producer may be overwriting these very words.
    for (size_t i = 0; i < size; i += 8) {
      const uint64_t v = word(pos + kHeaderSize + i).load(std::memory_order_relaxed);
      std::memcpy(scratch.data() + i, &v, 8);
    }
    // A producer stores into this record's space only after it has seen the tail pass it (and
    // fences between the two), so if the tail has not passed `pos` now, nothing copied above
    // came from a later record.
    std::atomic_thread_fence(std::memory_order_acquire);
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail > pos) {
      pos = tail;  // evicted while we copied: resume at the oldest record still held
      hold_from(pos);
      continue;
    }
    fn(type_of(header), std::span<const uint8_t>(scratch.data(), size));
    ++delivered;
    pos += record_size(size);
    hold_from(pos);
  }
  return delivered;
}

}  // namespace inprof::internal

#endif  // INPROF_LIB_RING_BUFFER_H_
