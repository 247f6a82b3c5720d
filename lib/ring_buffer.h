// A bounded, lock-free, multi-producer single-consumer ring of variable-size records.
//
// Producers (the sampler, and later marker writers on any thread) reserve space with one CAS and
// publish a record by storing its header last; the consumer (the writer thread) takes records in
// reservation order. When the ring is full a record is dropped and counted: memory stays bounded
// and a reader never sees a half-written record.
#ifndef INPROF_LIB_RING_BUFFER_H_
#define INPROF_LIB_RING_BUFFER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

namespace inprof::internal {

class RingBuffer {
 public:
  // `capacity` is rounded up to a power of two, at least 4 KiB.
  explicit RingBuffer(size_t capacity);
  RingBuffer(const RingBuffer&) = delete;
  RingBuffer& operator=(const RingBuffer&) = delete;

  // Largest payload a single record can carry.
  size_t max_payload() const { return capacity_ / 4; }
  size_t capacity() const { return capacity_; }

  // Copies one record in. Lock-free and allocation-free; callable from any thread. Returns false
  // (and counts a drop) when there is no room, or once the ring is closed.
  bool write(uint8_t type, std::span<const uint8_t> payload);

  // Refuses every later write. Records already reserved are still published; `all_published()`
  // tells when the last of them is, after which the storage may be released. A writer that
  // raced with close() touches only this object, never the storage: keep the object alive.
  void close() { head_.fetch_or(kClosed, std::memory_order_acq_rel); }
  bool all_published() const;
  void release_storage() { words_.reset(); }

  // Consumer side (one thread at a time): hands every published record, in order, to
  // `fn(type, payload)` and frees its space. A record still being written stops the drain; it is
  // delivered next time. Returns the number of records delivered.
  template <typename Fn>
  size_t drain(Fn&& fn);

  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  // Header word: payload size in bits 0..31, type in bits 32..39, bit 63 set once published.
  static constexpr uint64_t kPublished = uint64_t(1) << 63;
  static constexpr uint64_t kClosed = uint64_t(1) << 63;  // in head_
  static constexpr size_t kHeaderSize = 8;

  static size_t record_size(size_t payload) { return kHeaderSize + ((payload + 7) & ~size_t(7)); }
  uint64_t load_header(uint64_t pos) const;
  void copy_in(uint64_t pos, const uint8_t* src, size_t n);
  void copy_out(uint64_t pos, uint8_t* dst, size_t n) const;
  void clear(uint64_t pos, size_t n);

  size_t capacity_;
  size_t mask_;
  // 8-byte aligned storage; headers never straddle the end. calloc: a large block comes zeroed
  // from the kernel page by page, instead of being cleared up front by start().
  struct FreeDeleter {
    void operator()(uint64_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint64_t[], FreeDeleter> words_;
  alignas(64) std::atomic<uint64_t> head_{0};  // next byte to reserve
  alignas(64) std::atomic<uint64_t> tail_{0};  // next byte to consume
  alignas(64) std::atomic<uint64_t> dropped_{0};
  std::vector<uint8_t> scratch_;  // consumer only: a payload that wraps around the end
};

template <typename Fn>
size_t RingBuffer::drain(Fn&& fn) {
  size_t delivered = 0;
  uint64_t tail = tail_.load(std::memory_order_relaxed);
  for (;;) {
    uint64_t header = load_header(tail);
    if (!(header & kPublished)) break;
    size_t size = header & 0xffffffffu;
    uint8_t type = (header >> 32) & 0xff;
    size_t total = record_size(size);
    size_t offset = (tail + kHeaderSize) & mask_;
    std::span<const uint8_t> payload;
    if (offset + size <= capacity_) {
      payload = {reinterpret_cast<const uint8_t*>(words_.get()) + offset, size};
    } else {
      scratch_.resize(size);
      copy_out(tail + kHeaderSize, scratch_.data(), size);
      payload = scratch_;
    }
    fn(type, payload);
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

}  // namespace inprof::internal

#endif  // INPROF_LIB_RING_BUFFER_H_
