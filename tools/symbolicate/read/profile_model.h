// Everything symbolicate needs from a dump, collected in one pass: the process, the modules with
// their lifetimes, the threads and their samples. Stacks are interned, so memory grows with the
// number of distinct stacks rather than with the number of samples.
#ifndef INPROF_TOOLS_SYMBOLICATE_PROFILE_MODEL_H_
#define INPROF_TOOLS_SYMBOLICATE_PROFILE_MODEL_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "dump/dump_reader.h"
#include "read/flat_index_set.h"
#include "read/jit_map.h"

namespace inprof::symbolicate {

inline constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

struct ModuleInfo {
  internal::ModuleRecord record;
  uint64_t unload_ns = kNever;  // kNever: still loaded when the dump ended
  // The module's bytes when the dump holds them (the vDSO's image); null otherwise.
  std::shared_ptr<const std::vector<uint8_t>> image;
};

// One distinct raw stack as the sampler recorded it. The flags and leaf candidates are part of
// its identity because they change how it is turned into frames.
struct RawStack {
  std::vector<uint64_t> frames;  // [0] = leaf PC, then return addresses, outermost last
  uint32_t flags = 0;            // the SampleFlags that matter for conversion
  std::vector<internal::LeafCandidate> leaf_candidates;
  std::vector<internal::SampleLabel> labels;  // LabelScopes active in the sample
  std::optional<internal::SampleWait> wait;   // the system call it slept in, and on what
};

using RawStackId = uint32_t;
inline constexpr RawStackId kNoStack = std::numeric_limits<RawStackId>::max();

// How much of the time since its previous sample a thread spent on a CPU. Whether a thread that
// ran little was blocked or only waited for a CPU is decided from where it was (syscall_site.h).
enum class CpuUse : uint8_t {
  kUnknown = 0,  // no CPU time recorded, or no earlier sample to measure from
  kMostly = 1,   // at least half of it
  kLittle = 2,   // some, less than half
  kNone = 3,     // none: a repeat (the sampler saw that the thread had not run at all)
};

struct RawSample {
  uint64_t time_ns = 0;
  std::optional<uint64_t> cpu_delta_ns;
  RawStackId stack = kNoStack;
  CpuUse cpu_use = CpuUse::kUnknown;
};

// A thread's samples in file order, packed as varints (a few bytes each instead of 40).
class RawSampleList {
 public:
  void push_back(const RawSample& s);
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool in_time_order() const { return in_order_; }
  // The time of the latest sample pushed; nothing before the first.
  std::optional<uint64_t> last_time() const {
    return size_ ? std::optional<uint64_t>(last_time_) : std::nullopt;
  }
  // Calls f(const RawSample&) for each sample, in file order.
  template <typename F>
  void for_each(F&& f) const {
    RawSample s;
    uint64_t time = 0;
    for (size_t i = 0; i < bytes_.size();) {
      uint64_t stack = read(i), delta = read(i), cpu = read(i);
      time += (delta >> 1) ^ (~(delta & 1) + 1);  // zig-zag
      s.time_ns = time;
      s.cpu_use = static_cast<CpuUse>(stack & 3);
      s.stack = (stack >> 2) ? static_cast<RawStackId>((stack >> 2) - 1) : kNoStack;
      s.cpu_delta_ns = cpu ? std::optional<uint64_t>(cpu - 1) : std::nullopt;
      f(s);
    }
  }
  std::vector<RawSample> to_vector() const;
  RawSample operator[](size_t i) const { return to_vector()[i]; }  // for tests

 private:
  void write(uint64_t v);
  uint64_t read(size_t& i) const {
    uint64_t v = 0;
    for (int shift = 0; i < bytes_.size() && shift < 64; shift += 7) {
      uint8_t b = bytes_[i++];
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    return v;
  }
  std::vector<uint8_t> bytes_;
  size_t size_ = 0;
  uint64_t last_time_ = 0;
  bool in_order_ = true;
};

struct ThreadInfo {
  uint64_t tid = 0;
  std::string name;  // latest ThreadStart/ThreadName name; empty if none was seen
  bool is_main = false;
  std::optional<uint64_t> start_ns;
  std::optional<uint64_t> end_ns;
  RawSampleList samples;
};

// A sampled allocation or the free of a recorded block, in file order (times are not sorted:
// a free reaches the dump before the allocation the sampler unwound later).
struct RawAllocationEvent {
  uint64_t time_ns = 0;
  uint64_t tid = 0;
  uint64_t address = 0;
  uint64_t size = 0;    // 0 for a free
  uint64_t weight = 0;  // the bytes it stands for; 0 for a free
  RawStackId stack = kNoStack;
  bool is_free = false;
};

struct CounterInfo {
  internal::CounterRecord record;
  bool declared = false;  // false: samples arrived, but no counter record
  std::vector<internal::CounterSampleRecord> samples;  // in file order
};

// A pause (Profiler::pause) and the resume that ended it, if any.
struct PauseRange {
  uint64_t start_ns = 0;
  std::optional<uint64_t> end_ns;
};

class ProfileModel : public internal::DumpVisitor {
 public:
  void on_process(const internal::ProcessRecord& r) override;
  void on_module_load(const internal::ModuleRecord& r) override;
  void on_module_image(const internal::ModuleImageRecord& r) override;
  void on_module_unload(const internal::ModuleUnloadRecord& r) override;
  void on_thread_start(const internal::ThreadRecord& r) override;
  void on_thread_name(const internal::ThreadRecord& r) override;
  void on_thread_end(const internal::ThreadEndRecord& r) override;
  void on_sample(const internal::SampleRecord& r) override;
  void on_sample_repeat(const internal::SampleRepeatRecord& r) override;
  void on_stats(const internal::StatsRecord& r) override;
  void on_end(const internal::EndRecord& r) override;
  void on_category(const internal::CategoryRecord& r) override;
  void on_marker_schema(const internal::MarkerSchemaRecord& r) override;
  void on_marker(const internal::MarkerRecord& r) override;
  void on_string(const internal::StringRecord& r) override;
  void on_counter(const internal::CounterRecord& r) override;
  void on_counter_sample(const internal::CounterSampleRecord& r) override;
  void on_pause(const internal::PauseRecord& r) override;
  void on_resume(const internal::PauseRecord& r) override;
  void on_jit_map(const internal::JitMapRecord& r) override;
  void on_capture(const internal::CaptureRecord& r) override { capture_ = r; }
  void on_allocation(const internal::AllocationRecord& r) override;
  void on_free(const internal::FreeRecord& r) override;
  void on_allocation_stats(const internal::AllocationStatsRecord& r) override {
    allocation_stats_ = r;
  }

  const std::optional<internal::ProcessRecord>& process() const { return process_; }
  const std::vector<ModuleInfo>& modules() const { return modules_; }
  // Threads in the order they were first seen.
  const std::vector<ThreadInfo>& threads() const { return threads_; }
  const RawStack& stack(RawStackId id) const { return *stacks_[id]; }
  size_t stack_count() const { return stacks_.size(); }
  size_t sample_count() const { return sample_count_; }
  const std::optional<internal::StatsRecord>& stats() const { return stats_; }
  // Every statistics record, in file order (each cumulative since the session's start).
  const std::vector<internal::StatsRecord>& stats_history() const { return stats_history_; }
  const std::optional<uint64_t>& end_ns() const { return end_ns_; }
  // A flight-recorder capture: the time range the dump covers.
  const std::optional<internal::CaptureRecord>& capture() const { return capture_; }
  bool any_cpu_delta() const { return any_cpu_delta_; }
  // On-CPU samples that carried more than kGapPieceIntervals intervals of CPU (they followed a
  // gap in the sampling), and the CPU beyond that, shown under [ran between samples].
  uint64_t gap_samples() const { return gap_samples_; }
  uint64_t gap_cpu_ns() const { return gap_cpu_ns_; }
  // Samples the model made beside the dump's own: in long sleeps (fill_sleep()), and for CPU run
  // unseen or past a sample's 16 intervals (push_sample()).
  uint64_t added_samples() const { return added_samples_; }
  // Repeat records that had no earlier sample on their thread (they get an empty stack).
  uint64_t orphan_repeats() const { return orphan_repeats_; }
  // Categories by dump id (a later record with the same id replaces an earlier one).
  const std::map<uint32_t, internal::CategoryRecord>& categories() const { return categories_; }
  const std::map<uint32_t, internal::MarkerSchemaRecord>& marker_schemas() const {
    return schemas_;
  }
  // Markers in file order; their tids may name threads that have no samples.
  const std::vector<internal::MarkerRecord>& markers() const { return markers_; }
  // Text of a string record (label names), or null if the dump has none with that id.
  const std::string* string(uint64_t id) const;
  // Counters in the order their ids first appeared.
  const std::vector<CounterInfo>& counters() const { return counters_; }
  // Pauses in time order; a pause without a resume has no end.
  const std::vector<PauseRange>& pauses() const { return pauses_; }
  // The process's JIT symbol map (empty if the dump has none).
  const JitMap& jit_map() const { return jit_map_; }
  // Sampled allocations and frees of recorded blocks, in file order.
  const std::vector<RawAllocationEvent>& allocations() const { return allocations_; }
  const std::optional<internal::AllocationStatsRecord>& allocation_stats() const {
    return allocation_stats_;
  }
  // The latest time any record carries (for ranges left open at the end of the dump).
  uint64_t last_time_ns() const { return last_time_ns_; }

 private:
  ThreadInfo& thread(uint64_t tid);
  CounterInfo& counter(uint32_t id);
  void saw_time(uint64_t t) { last_time_ns_ = std::max(last_time_ns_, t); }
  RawStackId intern(const internal::SampleRecord& r);
  // A sample's stack: by the reader's stack key when it has one (no frames hashed), else interned.
  RawStackId stack_of(const internal::SampleRecord& r);

  static uint64_t key_hash(std::span<const uint64_t> key);

  std::optional<internal::ProcessRecord> process_;
  // Samples in the sleep a repeat without CPU ends (see fill_sleep()).
  static constexpr uint64_t kSleepStepIntervals = 50;
  static constexpr uint64_t kSleepStepNs = 50000000;
  void fill_sleep(RawSampleList& samples, RawStackId stack, CpuUse use, uint64_t until_ns);
  // Pushes an on-CPU sample; the CPU it carries beyond kGapPieceIntervals intervals (after a gap
  // in the sampling) goes to samples of its own under [ran between samples] (see push_sample()).
  static constexpr uint64_t kGapPieceIntervals = 16;  // SampleWeigher::kMaxIntervals
  static constexpr uint32_t kMostGapPieces = 4096;
  void push_sample(RawSampleList& samples, RawSample s, bool unseen);
  RawStackId gap_stack();
  // The same stack with [ran between samples] above it (kSampleRanUnseen).
  RawStackId unseen_variant(RawStackId id);
  RawStackId gap_stack_ = kNoStack;
  uint64_t gap_samples_ = 0;
  uint64_t added_samples_ = 0;
  uint64_t gap_cpu_ns_ = 0;
  std::vector<ModuleInfo> modules_;
  std::unordered_map<uint64_t, size_t> module_by_id_;
  std::vector<ThreadInfo> threads_;
  std::unordered_map<uint64_t, size_t> thread_by_tid_;
  std::unordered_map<uint64_t, RawStackId> last_stack_by_tid_;
  // Interning: a flat key (flags, frames, candidates, labels) per stack, all in one pool
  // (stack_keys_[key_begin_[id], key_begin_[id + 1])), found again through a flat index set.
  FlatIndexSet stack_ids_;
  std::vector<uint64_t> stack_keys_;
  std::vector<size_t> key_begin_ = {0};
  std::vector<std::unique_ptr<RawStack>> stacks_;
  std::vector<uint64_t> key_scratch_;
  // By stack key - 1 (the reader numbers a dump's stack records from 1): the id interned for it.
  std::vector<RawStackId> stack_by_key_;
  size_t sample_count_ = 0;
  std::optional<internal::StatsRecord> stats_;
  std::vector<internal::StatsRecord> stats_history_;
  std::optional<uint64_t> end_ns_;
  std::optional<internal::CaptureRecord> capture_;
  bool any_cpu_delta_ = false;
  uint64_t orphan_repeats_ = 0;
  std::map<uint32_t, internal::CategoryRecord> categories_;
  std::map<uint32_t, internal::MarkerSchemaRecord> schemas_;
  std::vector<internal::MarkerRecord> markers_;
  std::unordered_map<uint64_t, std::string> strings_;
  std::vector<CounterInfo> counters_;
  std::unordered_map<uint32_t, size_t> counter_by_id_;
  std::vector<PauseRange> pauses_;
  JitMap jit_map_;
  std::vector<RawAllocationEvent> allocations_;
  std::optional<internal::AllocationStatsRecord> allocation_stats_;
  uint64_t last_time_ns_ = 0;
};

// What the profiler's own threads cost, for the statistics line and Profile Info: "12.3 ms of
// CPU (0.4 % of one CPU over the profile)", the share where the profile's end is known.
std::string profiler_cpu_text(uint64_t cpu_ns, const std::optional<uint64_t>& end_ns);
// ", of which the sampler … in N ticks (… each, at most …)", or nothing for older dumps.
std::string tick_cost_text(const internal::StatsRecord& stats);
// Why the kernel gave no sampling rings, where it refused any (sampling/kernel_ring_refusals.h):
// "kernel sampling rings refused 12 times: the user's perf_event_mlock_kb allowance was used up
// ...; threads were sampled by CPU-clock timers instead ...", or nothing.
std::string kernel_rings_text(const internal::StatsRecord& stats);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_PROFILE_MODEL_H_
