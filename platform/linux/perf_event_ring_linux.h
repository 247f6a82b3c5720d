// One thread sampled by the kernel itself: a perf_event cpu-clock event on the thread that, after
// each `period` of the thread's CPU time, has the kernel copy the thread's user
// registers and the top of its user stack into a ring mapped in our process. Nothing is delivered
// to the thread: no signal, no handler, nothing it could accept or be interrupted by. The sampler
// reads the ring at leisure.
//
// Costs: one mapping of (1 + data_pages) pages, charged by the kernel to the user's
// perf_event_mlock_kb allowance. No descriptor: it is closed as soon as the ring is mapped (the
// mapping keeps the event alive), and nothing wakes a reader: the sampler reads on its own clock,
// knowing how soon a ring can fill (samples_until_reading()). Every record takes the full requested
// stack size in the ring (the kernel reserves it before it knows how deep the stack is), so the
// stack size is chosen per thread (see PerfSelfSampling).
#ifndef INPROF_PLATFORM_LINUX_PERF_EVENT_RING_LINUX_H_
#define INPROF_PLATFORM_LINUX_PERF_EVENT_RING_LINUX_H_

#include <cstddef>
#include <cstdint>

#include "unwind/stack_snapshot.h"

namespace inprof::internal {

// The largest stack the kernel copies per sample: the whole record (about 200 bytes besides the
// stack) must fit its 16-bit size.
inline constexpr uint32_t kMaxPerfStackBytes = (65535 - 256) & ~7u;

// The process's pinned memory (/proc/self/status VmPin, kB), which the kernel charges against the
// program's RLIMIT_MEMLOCK: a ring beyond the user's perf_event_mlock_kb allowance (other
// processes of the same user, a perf record, used it up) is charged there. -1 if unknown.
long pinned_kb();

// Counts a refusal of a kernel ring (sampling/kernel_ring_refusals.h): `error`, what
// perf_event_open or mmap said (EPERM from mmap: over the locked-memory limit), or 0 with
// `charged` when the mapping was charged to the program's RLIMIT_MEMLOCK and given back.
void count_ring_refusal(int error, bool from_mmap, bool charged = false);

class PerfEventRing {
 public:
  struct Spec {
    uint64_t tid = 0;
    uint64_t period_ns = 0;
    uint32_t stack_bytes = 0;  // a multiple of 8, at most kMaxPerfStackBytes
    uint32_t data_pages = 0;   // a power of two
    bool user_only = false;    // count user time only, even where kernel time may be counted
  };

  PerfEventRing() = default;
  ~PerfEventRing() { close(); }
  PerfEventRing(const PerfEventRing&) = delete;
  PerfEventRing& operator=(const PerfEventRing&) = delete;

  // 0, or the errno of the refusal (EACCES/EPERM: perf_event_paranoid, a container's seccomp
  // policy or the locked-memory allowance; ENOSYS: no perf events; ESRCH: the thread is gone).
  int open(const Spec& spec);
  void close();
  bool is_open() const { return map_ != nullptr; }
  uint32_t stack_bytes() const { return spec_.stack_bytes; }
  size_t mapped_bytes() const { return mapped_bytes_; }

  // The oldest sample not yet consumed, parsed into `out` (its buffer points into the ring, or
  // into `staging` when the record wraps around the ring's end); other records are consumed on
  // the way (lost-sample records counted). False when there is none.
  bool next(StackSnapshot* out, uint8_t* staging, size_t staging_size);
  // Consumes the sample next() returned.
  void pop();
  // Samples the kernel could not write because the ring was full.
  uint64_t lost() const { return lost_; }
  // Whether the ring is three quarters full (the sampler should read it now).
  bool needs_reading() const;
  // How many more samples the kernel may write before needs_reading(), counted low (every record
  // as large as it can be): the thread gets at most one per period of its CPU time, so the ring
  // cannot need reading sooner than that many periods from now.
  uint64_t samples_until_reading() const;

 private:
  void consume(uint64_t bytes);
  // Copies `n` bytes at ring offset `offset` (wrapping) into `out`.
  void read_ring(uint64_t offset, void* out, size_t n) const;
  bool parse_sample(const uint8_t* record, size_t size, StackSnapshot* out) const;

  Spec spec_;
  void* map_ = nullptr;
  size_t mapped_bytes_ = 0;
  uint8_t* data_ = nullptr;
  uint64_t data_size_ = 0;
  uint64_t pending_bytes_ = 0;  // size of the sample next() returned, consumed by pop()
  uint64_t lost_ = 0;
  uint64_t base_cpu_ns_ = 0;  // the thread's CPU time when the event started counting
};

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_PERF_EVENT_RING_LINUX_H_
