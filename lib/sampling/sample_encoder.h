// The sample encoder: a thread's snapshot becomes the ring's records here (the sample unwound, its
// labels placed, the leaf evidence of a frame-pointer walk; repeats of it; the CPU a thread leaves
// behind as it ends), and so do allocations, crash samples and counters. One writer for the dump's
// sample records, apart from the sampler's decisions (which thread, when, by which way), keeps
// what those records must agree on in one place: a repeat refers only to a sample the ring really
// holds, and the CPU a thread's records carry adds up to what it used, once.
//
// Sampler thread only, never while a thread is stopped. Its scratch (frames, the encode buffer)
// is preallocated and reused: writing allocates nothing but a new label's string record.
#ifndef INPROF_LIB_SAMPLING_SAMPLE_ENCODER_H_
#define INPROF_LIB_SAMPLING_SAMPLE_ENCODER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "allocations/allocation_pool.h"
#include "dump/dump_records.h"
#include "memory/large_alloc.h"
#include "sampling/module_lister.h"
#include "sampling/sampler_config.h"
#include "sampling/thread_state.h"
#include "session/metadata_queue.h"
#include "session/ring_buffer.h"
#include "unwind/unwinder.h"

namespace inprof::internal {

class SampleEncoder {
 public:
  SampleEncoder(const SamplerConfig& config, std::unique_ptr<Unwinder> unwinder, RingBuffer& ring,
                MetadataQueue& metadata);
  SampleEncoder(const SampleEncoder&) = delete;
  SampleEncoder& operator=(const SampleEncoder&) = delete;

  // The modules now mapped: the unwinder's, and the code ranges leaf candidates must fall in.
  void set_modules(const std::vector<ModuleInfo>& modules);

  // Unwinds `snapshot` and writes it as the thread's sample at `time_ns`.
  UnwindOutput write_sample(uint64_t tid, ThreadState& state, const StackSnapshot& snapshot,
                            std::optional<uint64_t> cpu_delta, uint64_t time_ns,
                            uint32_t extra_flags = 0);
  // The SP of the outermost frame of the last write_sample()'s walk (0: no frame).
  uint64_t outermost_sp(const UnwindOutput& unwound) const {
    return unwound.count > 0 ? frame_sps_[unwound.count - 1] : 0;
  }
  // A repeat of the thread's last sample at `at`.
  void write_repeat(uint64_t tid, ThreadState& state, uint64_t at,
                    std::optional<uint64_t> cpu_delta);
  // The CPU a thread used after its last sample, as it ends (or the session does): a repeat of
  // its last stack carrying it, else no sample would (a timer's last expirations before the
  // thread exits; symbolicate counts what exceeds its cap as not represented).
  void write_tail(uint64_t tid, ThreadState& state);
  // Repeats of its last stack at `at` carrying `cpu_ns`, split so that none stands for more
  // than kMostIntervalsPerSample intervals.
  void write_cpu_repeats(uint64_t tid, ThreadState& state, uint64_t at, uint64_t cpu_ns);
  // A crashed thread's sample (no labels: its label stack is not trusted any more); whether the
  // ring took it.
  bool write_crash_sample(uint64_t tid, const StackSnapshot& snapshot);
  // A sampled allocation, its stack from the call into the allocator; false: dropped.
  bool write_allocation(const AllocationSlot& slot);
  // The counters whose value changed since they were last written (markers/declarations.h).
  void write_counters(uint64_t now);
  bool has_counters() const { return !counters_.empty(); }

  uint64_t samples_written() const { return samples_written_.load(); }
  uint64_t samples_dropped() const { return samples_dropped_.load(); }

 private:
  // Writes an encoded record and counts it (written or dropped).
  void commit_record(RecordType type, const ByteWriter& w, ThreadState& state);
  // Evidence for symbolicate's leaf fix-up after a frame-pointer walk (FORMAT.md); `out` holds
  // kLeafCandidateSlots + 1 entries.
  size_t leaf_candidates(const StackSnapshot& snapshot, LeafCandidate* out) const;
  // The sample flags that describe a walk (and, after a frame-pointer walk, its leaf candidates:
  // kLeafCandidateSlots + 1 at most).
  uint32_t walk_flags(const UnwindOutput& unwound, const StackSnapshot& snapshot,
                      LeafCandidate* candidates, size_t* candidate_count) const;
  bool in_code(uint64_t address) const;
  // Places the snapshot's labels among `count` unwound frames; returns how many were placed.
  size_t place_labels(const StackSnapshot& snapshot, size_t count, SampleLabel* out);
  uint64_t intern_label(const char* name);
  uint64_t relative(uint64_t t) const { return config_.relative(t); }

  const SamplerConfig& config_;
  std::unique_ptr<Unwinder> unwinder_;
  RingBuffer& ring_;
  MetadataQueue& metadata_;

  std::vector<std::pair<uint64_t, uint64_t>> code_ranges_;  // sorted, for leaf candidates
  // Pre-allocated per-sample scratch: the hot path does not allocate.
  MappedVector<uint64_t> frames_;  // large_alloc.h: max_frames deep, not from the heap
  MappedVector<uint64_t> frame_sps_;
  MappedVector<uint8_t> encode_buffer_;

  std::unordered_map<const char*, uint64_t> label_ids_;
  uint64_t next_string_id_ = 1;
  struct CounterState {
    uint32_t id;
    std::atomic<int64_t>* value;
    bool written = false;
    int64_t last = 0;
  };
  std::vector<CounterState> counters_;

  std::atomic<uint64_t> samples_written_{0};
  std::atomic<uint64_t> samples_dropped_{0};
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_SAMPLING_SAMPLE_ENCODER_H_
