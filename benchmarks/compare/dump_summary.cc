// Summarises an inprof dump for the comparison harness, with the same yardsticks the harness
// applies to perf and gperftools output:
//   samples        sample records (the thread was interrupted and unwound)
//   repeats        sample-repeat records (an idle thread, not interrupted)
//   in_program     samples with a frame in the main executable (the workload's code)
//   reached_start  of those, samples whose walk ended at the outermost frame, in libc
//                  (start_thread/clone3 or __libc_start_call_main)
//   frames_median  frames per sample
//   stats_*        the session's own counters (the last stats record)
//   compact_ns_bytes_per_sample, compact_us_bytes_per_sample: estimates for a denser sample
//                  encoding (see Compactor below): stacks deduplicated, times delta-encoded, in
//                  ns or rounded to µs; samples_only_bytes_per_sample: the same
//                  samples written whole (dump format version 1), chunked and compressed the
//                  same way. Format version 2 (lib/dump/FORMAT.md) implements the compact
//                  encoding: the dump's own size is what it costs.
// Output: one line of key=value pairs. Exit status 1 if the dump cannot be read.
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "dump/dump_reader.h"

namespace inprof::internal {
namespace {

// Re-encodes samples the way a denser format could, and compresses them in chunks as the
// writer does (zstd level 3, a frame per 1 MiB or per 500 ms), to tell how much the format's
// choices cost: each distinct stack (frames + leaf candidates) is written once and referred to
// by index; times and CPU deltas are differences from the thread's previous sample, in units of
// `resolution_ns`.
class Compactor {
 public:
  // resolution_ns 0: samples written whole (format version 1), for comparison.
  explicit Compactor(uint64_t resolution_ns) : unit_(resolution_ns) {}
  void add(const SampleRecord& s) {
    if (unit_ == 0) {
      ByteWriter w(&scratch_);
      encode_sample(w, s.tid, s.time_ns, s.cpu_delta_ns, s.flags, s.frames, s.leaf_candidates,
                    s.labels);
      framed(RecordType::kSample, w.view(), s.time_ns);
      return;
    }
    std::vector<uint64_t> key(s.frames);
    for (const LeafCandidate& c : s.leaf_candidates) {
      key.push_back(c.slot);
      key.push_back(c.value);
    }
    auto [it, inserted] = stacks_.try_emplace(std::move(key), stacks_.size());
    ThreadState& t = threads_[s.tid];
    ByteWriter w(&scratch_);
    w.varint(s.tid);
    w.svarint(static_cast<int64_t>(s.time_ns / unit_) - static_cast<int64_t>(t.time_ns / unit_));
    w.svarint(static_cast<int64_t>(s.cpu_delta_ns.value_or(0) / unit_) -
              static_cast<int64_t>(t.cpu_ns / unit_));
    w.varint(s.flags);
    w.varint(it->second);
    if (inserted) {  // a new stack: its frames follow, as deltas
      w.varint(it->first.size());
      uint64_t previous = 0;
      for (uint64_t v : it->first) {
        w.svarint(static_cast<int64_t>(v - previous));
        previous = v;
      }
    }
    t.time_ns = s.time_ns;
    t.cpu_ns = s.cpu_delta_ns.value_or(0);
    append(w.view(), s.time_ns);
  }
  void add_repeat(const SampleRepeatRecord& r) {
    if (unit_ == 0) {
      ByteWriter w(&scratch_);
      encode(w, r);
      framed(RecordType::kSampleRepeat, w.view(), r.time_ns);
      return;
    }
    ThreadState& t = threads_[r.tid];
    ByteWriter w(&scratch_);
    w.varint(r.tid | (uint64_t(1) << 40));  // a marker bit: "repeat"
    w.svarint(static_cast<int64_t>(r.time_ns / unit_) - static_cast<int64_t>(t.time_ns / unit_));
    t.time_ns = r.time_ns;
    append(w.view(), r.time_ns);
  }
  uint64_t finish() {
    flush();
    return compressed_bytes_;
  }

 private:
  struct ThreadState {
    uint64_t time_ns = 0;
    uint64_t cpu_ns = 0;
  };
  void framed(RecordType type, std::span<const uint8_t> payload, uint64_t time_ns) {
    std::vector<uint8_t> record;
    append_record(record, type, payload);
    append(record, time_ns);
  }
  void append(std::span<const uint8_t> bytes, uint64_t time_ns) {
    chunk_.insert(chunk_.end(), bytes.begin(), bytes.end());
    if (chunk_.size() >= (1u << 20) || time_ns - chunk_start_ns_ >= 500000000u) {
      flush();
      chunk_start_ns_ = time_ns;
    }
  }
  void flush() {
    if (chunk_.empty()) return;
    std::vector<uint8_t> out(ZSTD_compressBound(chunk_.size()));
    const size_t n = ZSTD_compress(out.data(), out.size(), chunk_.data(), chunk_.size(), 3);
    if (!ZSTD_isError(n)) compressed_bytes_ += n;
    chunk_.clear();
  }
  const uint64_t unit_;
  std::map<std::vector<uint64_t>, uint64_t> stacks_;
  std::map<uint64_t, ThreadState> threads_;
  std::vector<uint8_t> scratch_, chunk_;
  uint64_t chunk_start_ns_ = 0;
  uint64_t compressed_bytes_ = 0;
};

class Summary final : public DumpVisitor {
 public:
  void on_module_load(const ModuleRecord& m) override { modules_.push_back(m); }
  void on_sample(const SampleRecord& s) override {
    ++samples_;
    as_written_.add(s);
    compact_ns_.add(s);
    compact_us_.add(s);
    frames_.push_back(s.frames.size());
    for (int bit = 0; bit < kFlagBits; ++bit) flag_counts_[bit] += (s.flags >> bit) & 1;
    constexpr uint32_t kMarked =
        kSampleTruncatedCopy | kSampleDepthLimit | kSampleNoStack | kSampleIncomplete;
    if (s.frames.size() <= 1 && !(s.flags & kMarked)) {
      ++leaf_only_unmarked_;
      if (verbose_)
        std::fprintf(stderr, "leaf-only unmarked: tid %llu at %.3f ms flags %#x\n",
                     static_cast<unsigned long long>(s.tid), double(s.time_ns) / 1e6, s.flags);
    }
    const bool in_program = std::any_of(s.frames.begin(), s.frames.end(), [&](uint64_t a) {
      const ModuleRecord* m = find(a);
      return m != nullptr && (m->flags & kModuleMainExecutable);
    });
    if (!in_program) return;
    ++in_program_;
    constexpr uint32_t kNotComplete =
        kSampleTruncatedCopy | kSampleDepthLimit | kSampleNoStack | kSampleIncomplete;
    if ((s.flags & kNotComplete) || s.frames.size() < 2) return;
    const ModuleRecord* outermost = find(s.frames.back());
    if (outermost != nullptr && outermost->path.find("/libc.so") != std::string::npos) ++reached_;
  }
  void on_sample_repeat(const SampleRepeatRecord& r) override {
    ++repeats_;
    as_written_.add_repeat(r);
    compact_ns_.add_repeat(r);
    compact_us_.add_repeat(r);
  }
  void on_stats(const StatsRecord& s) override { stats_ = s; }

  void print() {
    std::sort(frames_.begin(), frames_.end());
    const size_t median = frames_.empty() ? 0 : frames_[frames_.size() / 2];
    std::printf(
        "samples=%llu repeats=%llu in_program=%llu reached_start=%llu frames_median=%zu "
        "stats_recorded=%llu "
        "stats_dropped=%llu stats_timed_out=%llu stats_ticks_late=%llu stats_given_up=%llu "
        "samples_only_bytes_per_sample=%.2f compact_ns_bytes_per_sample=%.2f "
        "compact_us_bytes_per_sample=%.2f truncated=%llu depth_limit=%llu no_stack=%llu "
        "incomplete=%llu leaf_only_unmarked=%llu\n",
        static_cast<unsigned long long>(samples_), static_cast<unsigned long long>(repeats_),
        static_cast<unsigned long long>(in_program_), static_cast<unsigned long long>(reached_),
        median, static_cast<unsigned long long>(stats_.samples_recorded),
        static_cast<unsigned long long>(stats_.samples_dropped),
        static_cast<unsigned long long>(stats_.threads_timed_out),
        static_cast<unsigned long long>(stats_.ticks_late),
        static_cast<unsigned long long>(stats_.samples_given_up),
        samples_ ? double(as_written_.finish()) / double(samples_) : 0.0,
        samples_ ? double(compact_ns_.finish()) / double(samples_) : 0.0,
        samples_ ? double(compact_us_.finish()) / double(samples_) : 0.0,
        static_cast<unsigned long long>(flag_counts_[0]),
        static_cast<unsigned long long>(flag_counts_[1]),
        static_cast<unsigned long long>(flag_counts_[2]),
        static_cast<unsigned long long>(flag_counts_[4]),
        static_cast<unsigned long long>(leaf_only_unmarked_));
  }

 private:
  const ModuleRecord* find(uint64_t address) const {
    for (const ModuleRecord& m : modules_) {
      if (address >= m.start && address < m.end) return &m;
    }
    return nullptr;
  }

  static constexpr int kFlagBits = 5;
  uint64_t flag_counts_[kFlagBits] = {};
  uint64_t leaf_only_unmarked_ = 0;

 public:
  bool verbose_ = false;

 private:
  std::vector<ModuleRecord> modules_;
  std::vector<size_t> frames_;
  uint64_t samples_ = 0, repeats_ = 0, in_program_ = 0, reached_ = 0;
  StatsRecord stats_;
  Compactor as_written_{0};
  Compactor compact_ns_{1};
  Compactor compact_us_{1000};
};

}  // namespace
}  // namespace inprof::internal

int main(int argc, char** argv) {
  const bool verbose = argc == 3 && std::string(argv[1]) == "-v";
  if (argc != 2 && !verbose) {
    std::fprintf(stderr, "usage: dump_summary [-v] DUMP\n");
    return 2;
  }
  if (verbose) ++argv;
  inprof::internal::Summary summary;
  summary.verbose_ = verbose;
  const auto result = inprof::internal::read_dump_file(argv[1], summary);
  if (!result.ok) {
    std::fprintf(stderr, "dump_summary: %s: %s\n", argv[1], result.error.c_str());
    return 1;
  }
  summary.print();
  return 0;
}
