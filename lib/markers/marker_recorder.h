// Where markers go: the ring buffer of the running session. Recording is lock-free; a session
// that stops waits for recorders already inside before it frees its buffer.
#ifndef INPROF_LIB_MARKER_RECORDER_H_
#define INPROF_LIB_MARKER_RECORDER_H_

#include <atomic>
#include <cstdint>

#include "session/ring_buffer.h"

namespace inprof::internal {

class MarkerRecorder {
 public:
  static MarkerRecorder& instance();

  // A session starts (`ring`, with `start_ns` as its time origin) or stops.
  void attach(RingBuffer* ring, uint64_t start_ns);
  void detach();
  // In a forked child: forget the parent's ring without waiting (its writers are gone).
  void abandon() { ring_.store(nullptr); }

  // Runs `write(ring, start_ns)` against the current ring, if there is one. The session closes
  // its ring before releasing the ring's storage and never frees the ring object itself, so a
  // writer that loaded the pointer just before detach() is harmless: its write is refused.
  template <typename Fn>
  void with_ring(Fn&& write) {
    if (RingBuffer* ring = ring_.load(std::memory_order_acquire)) {
      write(*ring, start_ns_.load(std::memory_order_relaxed));
    }
  }

  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  void count_drop() { dropped_.fetch_add(1, std::memory_order_relaxed); }

 private:
  std::atomic<RingBuffer*> ring_{nullptr};
  std::atomic<uint64_t> start_ns_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_MARKER_RECORDER_H_
