// The conversion of one dump's model into the profile's tables (convert_profile's work), shared
// by its files: profile_converter.cc (meta, threads, samples, counters, allocations) and
// marker_converter.cc (categories, marker schemas, markers).
#ifndef INPROF_TOOLS_SYMBOLICATE_CONVERT_CONVERTER_H_
#define INPROF_TOOLS_SYMBOLICATE_CONVERT_CONVERTER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "convert/marker_context.h"
#include "convert/profile_builder.h"
#include "convert/profile_converter.h"
#include "convert/stack_converter.h"
#include "symbolize/module_map.h"

namespace inprof::symbolicate {

// The table stack each (raw stack, module epoch, CPU use) became: turns the model's packed
// samples into the profile's when they are written, so that they are kept only once. The first
// epochs with samples (nearly always the only ones) get a dense row of 4 x (raw stacks) entries;
// any later ones (a program loading and unloading libraries all the time) only the keys they use.
class ResolvedStacks {
 public:
  ResolvedStacks(const ModuleMap& module_map, size_t raw_stacks)
      : map_(module_map), raw_stacks_(raw_stacks) {}
  // The slot for a sample's stack: 0 until set, then the stack index + 1, or kNone.
  uint32_t& slot(const RawSample& s) {
    size_t epoch = map_.epoch(s.time_ns);
    auto [it, inserted] = rows_.try_emplace(epoch);
    if (inserted && rows_.size() <= kDenseRows) it->second.dense.assign(raw_stacks_ * kUses, 0);
    Row& row = it->second;
    const uint64_t key = key_of(s);
    return row.dense.empty() ? row.sparse[key] : row.dense[key];
  }
  static constexpr uint32_t kNone = UINT32_MAX;
  // Reads every sample of a time-ordered list, with its stack: the epoch is looked up only when
  // a sample's time passes the current epoch's end.
  template <typename F>
  void for_each(const RawSampleList& list, F&& f) const {
    const Row* row = nullptr;
    uint64_t row_end = 0;  // first time past the row's epoch
    bool have_row = false;
    list.for_each([&](const RawSample& s) {
      SampleTable::Sample out{std::nullopt, s.time_ns, s.cpu_delta_ns};
      if (s.stack != kNoStack) {
        if (!have_row || s.time_ns >= row_end) {
          size_t epoch = map_.epoch(s.time_ns);
          auto it = rows_.find(epoch);
          row = it == rows_.end() ? nullptr : &it->second;
          row_end = map_.epoch_end(epoch);
          have_row = true;
        }
        const uint64_t key = key_of(s);
        uint32_t v = 0;
        if (row && !row->dense.empty()) {
          v = row->dense[key];
        } else if (row) {
          auto it = row->sparse.find(key);
          if (it != row->sparse.end()) v = it->second;
        }
        if (v != 0 && v != kNone) out.stack = static_cast<StackIndex>(v - 1);
      }
      f(out);
    });
  }

 private:
  static constexpr size_t kDenseRows = 4;
  static constexpr size_t kUses = 4;  // CpuUse values
  static uint64_t key_of(const RawSample& s) {
    return uint64_t(s.stack) * kUses + static_cast<uint64_t>(s.cpu_use);
  }
  struct Row {
    std::vector<uint32_t> dense;  // by key, or empty
    std::unordered_map<uint64_t, uint32_t> sparse;
  };
  ModuleMap map_;
  size_t raw_stacks_;
  std::map<size_t, Row> rows_;  // by epoch
};

// More threads than this with samples or markers: only the busiest are shown at first.
constexpr size_t kMaxInitiallyVisibleThreads = 32;
// Up to this many threads are all shown when the profile opens, however little they ran.
constexpr size_t kFewThreads = 4;

class Converter {
 public:
  Converter(const ProfileModel& model, ProfileBuilder& builder, Diagnostics& diag,
            const ConvertOptions& options)
      : model_(model),
        b_(builder),
        diag_(diag),
        wait_marker_ns_(options.wait_marker_ns),
        stacks_(model, builder, diag, options, summary_) {}

  ConversionSummary run();

 private:
  void add_meta();
  // The dump's categories, by dump category id.
  std::map<uint32_t, CategoryIndex> add_categories();
  void add_threads();
  std::vector<const ThreadInfo*> thread_order(std::vector<std::unique_ptr<ThreadInfo>>& marker_only,
                                              std::unordered_set<uint64_t>& marker_tids);
  struct Activity;
  std::optional<uint64_t> add_samples(const ThreadInfo& info, Thread& t, Activity& activity);
  // What the sample weights could not represent (convert/sample_weight.h), for Profile Info.
  void add_weight_facts();
  void choose_initial_threads();
  void add_marker_schemas();
  void add_markers();
  std::optional<MarkerData> marker_data(const internal::MarkerRecord& m);
  const std::string& untyped_schema();
  // Each thread's waits of at least wait_marker_ns_ as interval markers (wait_markers.cc).
  void add_wait_markers();
  const std::string& wait_schema();
  void add_counters();
  void add_allocations();
  void add_paused_ranges();

  const ProfileModel& model_;
  ProfileBuilder& b_;
  Diagnostics& diag_;
  std::map<uint32_t, std::string> schema_names_;           // by dump marker type
  std::map<std::string, MarkerContextKeys> context_keys_;  // by schema name
  std::optional<std::string> untyped_schema_;              // its name, once added
  std::optional<std::string> wait_schema_;                 // its name, once added
  std::optional<uint64_t> wait_marker_ns_;
  std::unordered_map<uint64_t, ThreadIndex> thread_by_tid_;
  std::optional<ThreadIndex> main_thread_;
  struct Activity {            // of a thread, to choose what the viewer shows first
    bool has_content = false;  // samples or markers
    bool has_markers = false;
    uint64_t cpu_ns = 0;
    uint64_t samples = 0;  // with a stack
  };
  std::vector<Activity> activity_;  // by ThreadIndex
  uint64_t untyped_markers_ = 0;    // markers whose type has no schema record
  ConversionSummary summary_;
  StackConverter stacks_;  // after summary_, which it adds to
  std::shared_ptr<ResolvedStacks> resolved_ =
      std::make_shared<ResolvedStacks>(stacks_.module_map(), model_.stack_count());
  // Samples per mark (StackConverter::Mark; kMarks: complete).
  uint64_t marked_[StackConverter::kMarks + 1] = {};
};

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_CONVERT_CONVERTER_H_
