// A bounded queue of stack snapshots that one thread fills from its own signal handler and the
// sampler drains. One producer (a handler cannot interrupt itself: its signal is blocked while it
// runs) and one consumer (the sampler thread), so two counters and acquire/release suffice: no
// lock, no allocation, nothing the handler could block on.
//
// The stack bytes live in one arena used as a ring: a 3 KB stack takes 3 KB, not the largest copy
// allowed, so the same memory holds dozens of samples of a shallow stack and still a few of the
// deepest. Memory: entries x sizeof(StackSnapshot) + arena bytes, all allocated up front.
#ifndef INPROF_LIB_SELF_SAMPLE_QUEUE_H_
#define INPROF_LIB_SELF_SAMPLE_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "memory/large_alloc.h"
#include "unwind/stack_snapshot.h"

namespace inprof::internal {

class SelfSampleQueue {
 public:
  SelfSampleQueue(size_t entries, size_t arena_bytes)
      : entries_(new StackSnapshot[entries]),
        entry_ends_(new uint64_t[entries]),
        entry_count_(entries),
        arena_(make_large_array<uint8_t>(arena_bytes)),  // see large_alloc.h
        arena_size_(arena_bytes) {}
  SelfSampleQueue(const SelfSampleQueue&) = delete;
  SelfSampleQueue& operator=(const SelfSampleQueue&) = delete;

  // SUSPENDED (producer): a snapshot whose buffer has room for `stack_bytes` contiguous bytes, or
  // null when the queue is full (the sample is lost, never overwritten: the consumer may be
  // reading the oldest). Publish it with commit(); until then the consumer does not see it.
  StackSnapshot* reserve(size_t stack_bytes) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_.load(std::memory_order_acquire) >= entry_count_) return nullptr;
    uint64_t begin = write_position_;
    const uint64_t offset = begin % arena_size_;
    if (offset + stack_bytes > arena_size_) begin += arena_size_ - offset;  // keep it contiguous
    if (begin + stack_bytes - read_position_.load(std::memory_order_acquire) > arena_size_) {
      return nullptr;
    }
    reserved_begin_ = begin;
    StackSnapshot& entry = entries_[head % entry_count_];
    entry.buffer = arena_.get() + begin % arena_size_;
    entry.capacity = stack_bytes;
    entry.stack_size = 0;
    return &entry;
  }

  // SUSPENDED (producer): publishes the snapshot reserve() returned; the arena keeps its
  // stack_size bytes (at most what was reserved).
  void commit() {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    const StackSnapshot& entry = entries_[head % entry_count_];
    const size_t used = entry.stack_size < entry.capacity ? entry.stack_size : entry.capacity;
    write_position_ = reserved_begin_ + used;
    entry_ends_[head % entry_count_] = write_position_;
    head_.store(head + 1, std::memory_order_release);
  }

  // Consumer: the oldest published snapshot, or null.
  const StackSnapshot* front() const {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail == head_.load(std::memory_order_acquire)) return nullptr;
    return &entries_[tail % entry_count_];
  }

  // Consumer: done with front(); its entry and stack bytes go back to the producer.
  void pop() {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    read_position_.store(entry_ends_[tail % entry_count_], std::memory_order_release);
    tail_.store(tail + 1, std::memory_order_release);
  }

  // Empties the queue. Only while no producer can run (its thread's timer is gone and no handler
  // is inside), before the queue serves another thread.
  void reset() {
    head_.store(0, std::memory_order_relaxed);
    tail_.store(0, std::memory_order_relaxed);
    write_position_ = 0;
    reserved_begin_ = 0;
    read_position_.store(0, std::memory_order_release);
  }

  size_t entry_count() const { return entry_count_; }
  size_t arena_size() const { return arena_size_; }

  // How many snapshots that each reserve at most `reserved` bytes and keep at most `used` of them
  // the queue takes from empty, wherever its arena's ring stands: a reservation needs its size
  // free past the last copy, and may skip as much at the arena's end to stay contiguous.
  size_t snapshots_that_fit(size_t reserved, size_t used) const {
    if (reserved == 0 || 2 * reserved > arena_size_) return reserved == 0 ? entry_count_ : 0;
    used = used < 1 ? 1 : used < reserved ? used : reserved;
    const size_t fit = (arena_size_ - 2 * reserved) / used + 1;
    return fit < entry_count_ ? fit : entry_count_;
  }

 private:
  std::unique_ptr<StackSnapshot[]> entries_;
  std::unique_ptr<uint64_t[]> entry_ends_;  // arena position just past each entry's bytes
  const size_t entry_count_;
  LargeArray<uint8_t> arena_;
  const size_t arena_size_;
  std::atomic<uint64_t> head_{0};  // entries published (producer)
  std::atomic<uint64_t> tail_{0};  // entries consumed (consumer)
  uint64_t write_position_ = 0;    // arena bytes handed out, as a running count (producer only)
  uint64_t reserved_begin_ = 0;    // producer only
  std::atomic<uint64_t> read_position_{0};  // arena bytes given back (consumer)
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_SELF_SAMPLE_QUEUE_H_
