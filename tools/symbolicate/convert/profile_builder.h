// The Firefox Profiler processed-format tables (v66), built append-only: every handle_for_*
// call returns the index of an equal existing row or appends a new one, so the tables hold no
// duplicates. Indices are typed so a frame index cannot be used as a func index.
#ifndef INPROF_TOOLS_SYMBOLICATE_PROFILE_BUILDER_H_
#define INPROF_TOOLS_SYMBOLICATE_PROFILE_BUILDER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>

#include "read/flat_index_set.h"

namespace inprof::symbolicate {

enum class StringIndex : uint32_t {};
enum class CategoryIndex : uint32_t {};
enum class LibIndex : uint32_t {};
enum class ResourceIndex : uint32_t {};
enum class SourceIndex : uint32_t {};
enum class FuncIndex : uint32_t {};
enum class NativeSymbolIndex : uint32_t {};
enum class FrameIndex : uint32_t {};
enum class StackIndex : uint32_t {};
enum class ThreadIndex : uint32_t {};

template <typename Index>
constexpr uint32_t raw(Index i) {
  return static_cast<uint32_t>(i);
}

struct Category {
  std::string name;
  std::string color;
  std::vector<std::string> subcategories;
};

struct Lib {
  std::string name;
  std::string path;
  std::string debug_name;
  std::string debug_path;
  std::string breakpad_id;
  std::optional<std::string> code_id;
  std::string arch;
};

struct ResourceTable {
  std::vector<LibIndex> lib;
  std::vector<StringIndex> name;
  size_t size() const { return lib.size(); }
};

struct SourceTable {
  std::vector<StringIndex> filename;
  // The file's text, embedded for the source view (convert/source_embedder.h), or none. Either
  // empty or one entry per file.
  std::vector<std::optional<std::string>> content;
  size_t size() const { return filename.size(); }
};

struct FuncTable {
  std::vector<StringIndex> name;
  std::vector<std::optional<ResourceIndex>> resource;
  std::vector<std::optional<SourceIndex>> source;
  std::vector<std::optional<uint32_t>> line_number;
  size_t size() const { return name.size(); }
};

struct NativeSymbolTable {
  std::vector<LibIndex> lib;
  std::vector<uint64_t> address;  // library-relative
  std::vector<StringIndex> name;
  std::vector<std::optional<uint64_t>> function_size;
  size_t size() const { return lib.size(); }
};

struct FrameTable {
  std::vector<FuncIndex> func;
  std::vector<std::optional<uint64_t>> address;  // library-relative; nothing -> -1
  std::vector<uint32_t> inline_depth;
  std::vector<CategoryIndex> category;
  std::vector<uint32_t> subcategory;
  std::vector<std::optional<NativeSymbolIndex>> native_symbol;
  std::vector<std::optional<uint32_t>> line;
  size_t size() const { return func.size(); }
};

struct StackTable {
  std::vector<FrameIndex> frame;
  std::vector<std::optional<StackIndex>> prefix;
  size_t size() const { return frame.size(); }
};

// One thread's samples in time order, packed as varints of differences: a few bytes a sample, so
// that a long recording costs memory for its distinct stacks rather than for its samples.
class SampleTable {
 public:
  struct Sample {
    std::optional<StackIndex> stack;
    uint64_t time_ns = 0;  // since the profile's start
    std::optional<uint64_t> cpu_delta_ns;
  };
  // Calls its argument once for each sample, in time order (times must not decrease).
  using Source = std::function<void(const std::function<void(const Sample&)>&)>;

  // Times must not decrease (an earlier one is taken as the previous sample's).
  void push_back(const Sample& s);
  // The `count` samples are not stored but produced by `source` each time they are read: a long
  // recording's samples then exist once, packed, in the profile model. Not mixed with push_back.
  void set_source(size_t count, Source source);
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Calls f(const Sample&) for each sample, in order.
  template <typename F>
  void for_each(F&& f) const {
    if (source_) {
      source_(std::function<void(const Sample&)>(std::ref(f)));
      return;
    }
    Sample s;
    uint64_t time = 0;
    for (size_t i = 0; i < bytes_.size();) {
      uint64_t stack = read(i), delta = read(i), cpu = read(i);
      time += delta;
      s.stack =
          stack ? std::optional<StackIndex>(static_cast<StackIndex>(stack - 1)) : std::nullopt;
      s.time_ns = time;
      s.cpu_delta_ns = cpu ? std::optional<uint64_t>(cpu - 1) : std::nullopt;
      f(s);
    }
  }
  std::vector<Sample> to_vector() const;  // for tests

 private:
  void write(uint64_t v);
  uint64_t read(size_t& i) const {
    uint64_t v = 0;
    for (int shift = 0; i < bytes_.size(); shift += 7) {
      uint8_t b = bytes_[i++];
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    return v;
  }
  std::vector<uint8_t> bytes_;
  size_t size_ = 0;
  uint64_t last_time_ = 0;
  Source source_;
};

// A marker payload: {type, key: value, ...}. monostate is written as null.
using MarkerValue = std::variant<std::monostate, int64_t, double, std::string>;
struct MarkerData {
  std::string type;  // a MarkerSchema name
  std::vector<std::pair<std::string, MarkerValue>> fields;
  // The stack the marker's thread was in (the viewer's "cause": shown in its tooltip and the
  // marker sidebar), and when it was taken (since the profile's start).
  std::optional<StackIndex> cause_stack = std::nullopt;
  uint64_t cause_ns = 0;
};

enum class MarkerPhase : uint8_t {
  kInstant = 0,
  kInterval = 1,
  kIntervalStart = 2,
  kIntervalEnd = 3
};

struct MarkerTable {
  std::vector<StringIndex> name;
  std::vector<std::optional<uint64_t>> start_ns;  // since the profile's start
  std::vector<std::optional<uint64_t>> end_ns;
  std::vector<MarkerPhase> phase;
  std::vector<CategoryIndex> category;
  std::vector<std::optional<MarkerData>> data;
  size_t size() const { return name.size(); }
};

struct MarkerSchemaField {
  std::string key;
  std::string label;
  std::string format;   // a Firefox Profiler format name: "string", "bytes", "url", ...
  bool hidden = false;  // kept out of the tooltip and sidebar (a value only the viewer reads)
};

struct MarkerSchema {
  std::string name;
  std::vector<std::string> display;
  std::string chart_label, table_label, tooltip_label, description;  // empty: not written
  std::vector<MarkerSchemaField> fields;
  // The payload key whose value (a GraphColor name) colours the marker in the marker chart;
  // empty: not written, and the chart draws the marker in its default blue.
  std::string color_field;
};

struct PausedRange {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

// What the profiler cost the process, for the Firefox Profiler's Profile Info ("profilerOverhead",
// one per process). Rows: one per period between two of the dump's statistics records.
struct ProfilerOverhead {
  uint64_t pid = 0;
  ThreadIndex main_thread{};
  std::vector<uint64_t> time_ns;    // since the profile's start: the period's end
  std::vector<double> tick_cpu_us;  // the sampler's CPU per tick, mean over the period
  uint64_t duration_ns = 0;         // what the figures below cover
  uint64_t ticks = 0;
  uint64_t sampler_cpu_ns = 0;
  uint64_t profiler_cpu_ns = 0;  // the sampler's and the writer's
  uint64_t tick_cpu_min_ns = 0;
  uint64_t tick_cpu_max_ns = 0;
  uint64_t tick_interval_min_ns = 0;
  uint64_t tick_interval_max_ns = 0;
  size_t size() const { return time_ns.size(); }
};

struct Counter {
  std::string name;
  std::string category;  // a category name, not an index
  std::string description;
  uint64_t pid = 0;
  ThreadIndex main_thread{};
  // counters[i].display, required from processed version 62 on.
  std::string graph_type = "line-accumulated";
  std::string unit;
  std::string color = "grey";
  std::vector<uint64_t> time_ns;  // since the profile's start
  std::vector<int64_t> count;     // change since the previous sample; the first is the value
  // The counter's value at each sample, written as samples.number: the viewer's running total
  // of `count` is shown minus its lowest point, so only this column gives the real value.
  std::vector<int64_t> value;
  size_t size() const { return time_ns.size(); }
};

// A thread's nativeAllocations (Firefox Profiler processed format): its sampled allocations
// (weight > 0) and the frees of its blocks (weight < 0, whatever thread freed them), in time
// order.
struct NativeAllocationTable {
  std::vector<uint64_t> time_ns;  // since the profile's start
  std::vector<int64_t> weight;    // bytes
  std::vector<std::optional<StackIndex>> stack;
  std::vector<uint64_t> address;
  std::vector<uint64_t> thread_id;  // the thread that allocated or freed
  size_t size() const { return time_ns.size(); }
};

struct Thread {
  std::string name;
  bool is_main = false;
  std::string process_name;
  uint64_t pid = 0;
  uint64_t tid = 0;
  uint64_t register_ns = 0;
  std::optional<uint64_t> unregister_ns;
  std::vector<PausedRange> paused_ranges;
  SampleTable samples;
  MarkerTable markers;
  NativeAllocationTable allocations;
};

// A row of meta.extra ("Profile Info" panel).
struct ExtraEntry {
  std::string label;
  std::variant<std::string, uint64_t, bool> value;
  bool setting = false;  // a number each process has the same way (a rate), not a count to sum
};

struct Meta {
  uint64_t start_unix_ns = 0;
  uint64_t interval_ns = 1'000'000;
  std::string product;
  std::string arguments;
  bool symbolicated = true;  // false: the viewer symbolicates (symbolicate --no-symbols)
  std::string oscpu;         // OS, release and architecture: "Linux 6.1.0-27-amd64 x86_64"
  std::string platform;
  std::string cpu_name;        // empty: not written
  uint64_t physical_cpus = 0;  // 0: not written
  uint64_t logical_cpus = 0;
  uint64_t main_memory = 0;     // bytes
  bool has_cpu_deltas = false;  // write threadCPUDelta columns
  // The recorded session, since start_unix_ns. Without it the viewer's range runs from the first
  // to the last sample and hides markers outside it.
  std::optional<uint64_t> profiling_end_ns;
  uint64_t profiling_start_ns = 0;  // later than 0 for a flight-recorder capture
  std::vector<ExtraEntry> extra;
  // Thread indices: the tracks shown, and the one selected, when the profile is opened.
  std::optional<std::vector<uint32_t>> initial_visible_threads;
  std::optional<std::vector<uint32_t>> initial_selected_threads;
};

class ProfileBuilder {
 public:
  Meta& meta() { return meta_; }
  const Meta& meta() const { return meta_; }

  StringIndex handle_for_string(std::string_view s);
  CategoryIndex add_category(Category category);
  LibIndex add_lib(Lib lib);  // also adds the library's resource
  ResourceIndex resource_for_lib(LibIndex lib) const { return lib_resources_[raw(lib)]; }
  SourceIndex handle_for_source(std::string_view filename);
  FuncIndex handle_for_func(StringIndex name, std::optional<ResourceIndex> resource,
                            std::optional<SourceIndex> source, std::optional<uint32_t> line);
  NativeSymbolIndex handle_for_native_symbol(LibIndex lib, uint64_t address, StringIndex name,
                                             std::optional<uint64_t> size);
  FrameIndex handle_for_frame(FuncIndex func, std::optional<uint64_t> address,
                              uint32_t inline_depth, CategoryIndex category, uint32_t subcategory,
                              std::optional<NativeSymbolIndex> native_symbol,
                              std::optional<uint32_t> line);
  StackIndex handle_for_stack(std::optional<StackIndex> prefix, FrameIndex frame);
  void add_marker_schema(MarkerSchema schema) { marker_schemas_.push_back(std::move(schema)); }
  void add_counter(Counter counter) { counters_.push_back(std::move(counter)); }
  void add_overhead(ProfilerOverhead o) { overheads_.push_back(std::move(o)); }
  ThreadIndex add_thread(Thread thread);
  Thread& thread(ThreadIndex i) { return threads_[raw(i)]; }

  const std::vector<std::string>& strings() const { return strings_; }
  const std::vector<Category>& categories() const { return categories_; }
  const std::vector<Lib>& libs() const { return libs_; }
  const ResourceTable& resources() const { return resources_; }
  const SourceTable& sources() const { return sources_; }
  SourceTable& mutable_sources() { return sources_; }
  const FuncTable& funcs() const { return funcs_; }
  const NativeSymbolTable& native_symbols() const { return native_symbols_; }
  const FrameTable& frames() const { return frames_; }
  const StackTable& stacks() const { return stacks_; }
  const std::vector<Thread>& threads() const { return threads_; }
  const std::vector<MarkerSchema>& marker_schemas() const { return marker_schemas_; }
  const std::vector<Counter>& counters() const { return counters_; }
  const std::vector<ProfilerOverhead>& overheads() const { return overheads_; }

 private:
  Meta meta_;
  // Each table's rows are deduplicated by a FlatIndexSet over the table itself.
  std::vector<std::string> strings_;
  FlatIndexSet string_index_;
  std::vector<Category> categories_;
  std::vector<Lib> libs_;
  std::vector<ResourceIndex> lib_resources_;
  ResourceTable resources_;
  SourceTable sources_;
  FlatIndexSet source_index_;
  FuncTable funcs_;
  FlatIndexSet func_index_;
  NativeSymbolTable native_symbols_;
  FlatIndexSet native_symbol_index_;
  FrameTable frames_;
  FlatIndexSet frame_index_;
  StackTable stacks_;
  FlatIndexSet stack_index_;
  std::vector<Thread> threads_;
  std::vector<MarkerSchema> marker_schemas_;
  std::vector<Counter> counters_;
  std::vector<ProfilerOverhead> overheads_;
};

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_PROFILE_BUILDER_H_
