#include "profile_converter.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "graph_color.h"
#include "leaf_fixup.h"
#include "marker_context.h"
#include "module_map.h"
#include "module_symbolizer.h"
#include "parallel_symbolizer.h"
#include "syscall_site.h"
#include "track_names.h"

namespace inprof::symbolicate {
namespace {

// The address of the instruction a frame was executing. Only the leaf's is exact: every other
// frame holds a return address, just past its call, which may already be the next line, another
// inline level, the next function or past the module's end; the call's last byte is one before
// it. It is also the address the Firefox Profiler expects of a stack-walked frame.
uint64_t code_address(uint64_t address, bool leaf) {
  return leaf || address == 0 ? address : address - 1;
}

// The file a module was mapped from. The library records it (the loader's link resolved); a dump
// from before it did names the link (liblzma.so.5 for liblzma.so.5.4.1). The file that link
// leads to here is the mapped one if the locator found the module's own build there.
std::string mapped_path(const internal::ModuleRecord& rec, const ModuleFiles* files) {
  if (!files || rec.build_id.empty() || files->binary != rec.path || rec.path[0] != '/') {
    return rec.path;
  }
  std::error_code error;
  std::filesystem::path real = std::filesystem::canonical(rec.path, error);
  return error ? rec.path : real.string();
}

std::string hex_u64(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

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

class Converter {
 public:
  Converter(const ProfileModel& model, ProfileBuilder& builder, Diagnostics& diag,
            const ConvertOptions& options)
      : model_(model), b_(builder), diag_(diag), options_(options), map_(model.modules()) {
    modules_.resize(model.modules().size());
    stack_cache_.resize(model.stack_count());
    idle_stack_cache_.resize(model.stack_count());
    if (model.process()) {
      arch_ = model.process()->arch;
      fix_leaves_ = arch_ == "x86_64" || arch_ == "aarch64";
      if (model.process()->os == "linux") syscall_size_ = syscall_instruction_size(arch_);
    }
  }

  ConversionSummary run();

 private:
  struct LabelView {  // a label ready to be placed: its frame and its slot in the stack
    uint32_t position;
    FrameIndex frame;
  };
  struct ModuleState {
    bool located = false;
    std::optional<ModuleFiles> files;
    std::string why;  // when no files
    bool opened = false;
    std::unique_ptr<ModuleSymbolizer> symbolizer;  // this thread's, for CFI and stragglers
    ModuleAddresses batch;                         // symbolized ahead, in parallel
    size_t addresses = 0;
    std::optional<LibIndex> lib;
    std::unordered_map<uint64_t, std::optional<unsigned>> return_slots;  // by leaf address
    std::unordered_map<uint64_t, std::optional<bool>> syscall_sites;     // by leaf address
    // By address, [0] as a return address, [1] as a leaf: the run of frame_pool_ it became.
    FlatKeyMap frame_runs[2];
    FlatKeyMap funcs;           // by SourceFrame::function_key
    FlatKeyMap native_symbols;  // by the symbol's address in the module
  };
  struct FrameRun {  // frame_pool_[begin, end): an address's frames, outermost first
    uint32_t begin, end;
  };
  struct StackCacheEntry {
    size_t epoch = SIZE_MAX;
    std::optional<StackIndex> stack;
    std::optional<bool> in_syscall;  // of the leaf (idle_stack_cache_ only)
  };

  void add_meta();
  void add_categories();
  CategoryIndex category(uint32_t dump_id) const;
  void add_threads();
  void choose_initial_threads();
  void add_marker_schemas();
  void add_markers();
  std::optional<MarkerData> marker_data(const internal::MarkerRecord& m);
  const std::string& untyped_schema();
  void add_counters();
  void add_paused_ranges();
  std::optional<StackIndex> stack_for(RawStackId id, uint64_t time_ns, CpuUse use);
  // Whether a sample whose leaf is `address` was in a system call; nothing if the code there
  // cannot be read.
  std::optional<bool> in_syscall(uint64_t address, uint64_t time_ns);
  FrameIndex idle_frame(bool blocked);
  std::optional<StackIndex> build_stack(const RawStack& raw, uint64_t time_ns);
  FrameIndex label_frame(const internal::SampleLabel& label);
  FrameRun frames_for(uint64_t address, bool leaf, uint64_t time_ns);
  // Appends the frames of `address` in `module` (ModuleMap::kNone: in none) to frame_pool_.
  void make_frames(size_t module, uint64_t address, bool leaf);
  ModuleSymbolizer* symbolizer(size_t module);
  const ModuleFiles* files(size_t module);
  const AddressSymbol* symbol_for(size_t module, uint64_t vaddr);
  void symbolize_ahead();
  void report_modules();
  LibIndex lib(size_t module);
  FrameIndex truncated_frame();

  const ProfileModel& model_;
  ProfileBuilder& b_;
  Diagnostics& diag_;
  const ConvertOptions& options_;
  ModuleMap map_;
  std::string arch_;
  bool fix_leaves_ = false;
  CategoryIndex other_{}, native_{}, idle_{};
  std::optional<CategoryIndex> jit_;                       // only when the dump has a JIT map
  std::map<uint32_t, CategoryIndex> categories_;           // by dump category id
  std::map<uint32_t, std::string> schema_names_;           // by dump marker type
  std::map<std::string, MarkerContextKeys> context_keys_;  // by schema name
  std::optional<std::string> untyped_schema_;              // its name, once added
  std::unordered_map<uint64_t, ThreadIndex> thread_by_tid_;
  std::optional<ThreadIndex> main_thread_;
  struct Activity {            // of a thread, to choose what the viewer shows first
    bool has_content = false;  // samples or markers
    uint64_t cpu_ns = 0;
    uint64_t samples = 0;  // with a stack
  };
  std::vector<Activity> activity_;  // by ThreadIndex
  uint64_t untyped_markers_ = 0;    // markers whose type has no schema record
  std::vector<ModuleState> modules_;
  std::map<std::tuple<std::string, std::string, uint64_t>, LibIndex> lib_by_file_;
  std::vector<FrameIndex> frame_pool_;             // the frames of every address, in runs
  std::vector<FrameRun> frame_runs_;               // by the values of ModuleState::frame_runs
  FlatKeyMap unmapped_frame_runs_[2];              // the same for addresses in no module
  std::vector<StackCacheEntry> stack_cache_;       // one slot per raw stack: memory stays bounded
  std::vector<StackCacheEntry> idle_stack_cache_;  // the same stacks with an idle frame on top
  size_t syscall_size_ = 0;                        // 0: leaves are not checked for system calls
  std::optional<FrameIndex> idle_frames_[2];       // by idle_frame's `blocked`
  std::optional<FrameIndex> truncated_frame_;
  std::shared_ptr<ResolvedStacks> resolved_ =
      std::make_shared<ResolvedStacks>(map_, model_.stack_count());
  ConversionSummary summary_;
};

ConversionSummary Converter::run() {
  other_ = b_.add_category({"Other", "grey", {"Other"}});
  native_ = b_.add_category({"Native", "blue", {"Other"}});
  // The viewer finds idle samples by this exact name.
  idle_ = b_.add_category({"Idle", "transparent", {"Other"}});
  if (!model_.jit_map().empty()) jit_ = b_.add_category({"JIT", "green", {"Other"}});
  add_categories();
  add_meta();
  const JitMap& jit = model_.jit_map();
  if (jit.malformed_lines()) {
    diag_.info("JIT map: " + std::to_string(jit.malformed_lines()) + " malformed lines skipped");
  }
  if (jit.dropped_lines()) {
    diag_.warn("JIT map: " + std::to_string(jit.dropped_lines()) +
               " lines dropped over the size limits; their code stays unnamed");
  }
  symbolize_ahead();
  add_threads();
  add_marker_schemas();
  add_markers();
  add_counters();
  add_paused_ranges();
  report_modules();
  return summary_;
}

// The command line as a shell would take it: arguments with spaces or quotes are quoted.
std::string command_line_text(const std::vector<std::string>& args) {
  std::string text;
  for (const std::string& arg : args) {
    if (!text.empty()) text += ' ';
    if (!arg.empty() && arg.find_first_of(" \t\n'\"\\$`") == std::string::npos) {
      text += arg;
      continue;
    }
    text += '\'';
    for (char c : arg) text += c == '\'' ? std::string("'\\''") : std::string(1, c);
    text += '\'';
  }
  return text;
}

void Converter::add_meta() {
  Meta& meta = b_.meta();
  meta.has_cpu_deltas = model_.any_cpu_delta();
  // Times are relative to the session's start, so the session spans [0, its last record].
  uint64_t end = model_.end_ns().value_or(0);
  end = std::max(end, model_.last_time_ns());
  if (end > 0) meta.profiling_end_ns = end;
  if (const auto& c = model_.capture()) {
    // A flight-recorder capture covers only the range the ring still held.
    static constexpr const char* kReasons[] = {"on request", "on signal", "at stop", "at a crash"};
    meta.profiling_start_ns = c->start_ns;
    meta.profiling_end_ns = std::max(c->end_ns, c->start_ns);
    meta.extra.push_back(
        {"Capture", std::string("flight recorder, ") + kReasons[static_cast<int>(c->reason) & 3]});
    meta.extra.push_back(
        {"Capture range (ms since start)",
         std::to_string(c->start_ns / 1000000) + " to " + std::to_string(c->end_ns / 1000000)});
    meta.extra.push_back(
        {"Records overwritten before the capture", std::to_string(c->records_overwritten)});
  }
  if (const auto& p = model_.process()) {
    meta.start_unix_ns = p->start_unix_ns;
    if (p->interval_ns) meta.interval_ns = p->interval_ns;
    meta.product = TrackNames(&*p).process_name();
    meta.arguments = command_line_text(p->command_line);
    meta.platform = p->os == "linux" ? "Linux" : p->os == "windows" ? "Windows" : p->os;
    // The viewer shows oscpu as the OS, and in the title after the product.
    meta.oscpu = meta.platform;
    if (!p->os_release.empty()) meta.oscpu += " " + p->os_release;
    meta.oscpu += meta.oscpu.empty() ? p->arch : " " + p->arch;
    meta.cpu_name = p->cpu_name;
    meta.physical_cpus = p->physical_cpus;
    meta.logical_cpus = p->logical_cpus;
    meta.main_memory = p->memory_bytes;
    if (!p->os_name.empty()) meta.extra.push_back({"Operating system", p->os_name});
    if (!p->executable.empty()) meta.extra.push_back({"Executable", p->executable});
    meta.extra.push_back({"Process ID", std::to_string(p->pid)});
    meta.extra.push_back({"inprof library version", p->library_version});
  } else {
    diag_.warn("the dump has no process record: start time, interval and product are unknown");
  }
  if (meta.product.empty()) meta.product = "inprof profile";
  if (const auto& s = model_.stats()) {
    meta.extra.push_back({"Samples recorded", s->samples_recorded});
    meta.extra.push_back({"Samples dropped (buffer full)", s->samples_dropped});
    meta.extra.push_back({"Sampling attempts timed out", s->threads_timed_out});
    meta.extra.push_back(
        {"Samples given up (thread could not be interrupted unnoticed)", s->samples_given_up});
    meta.extra.push_back({"Sampler ticks late", s->ticks_late});
  }
  meta.extra.push_back({"Samples in this profile", uint64_t(model_.sample_count())});
  meta.extra.push_back({"Dump complete", model_.end_ns().has_value()});
}

void Converter::add_threads() {
  std::vector<const ThreadInfo*> order;
  for (const ThreadInfo& t : model_.threads()) order.push_back(&t);
  // A thread may only have markers (recorded while it was never sampled): it still gets a track.
  std::vector<std::unique_ptr<ThreadInfo>> marker_only;
  std::unordered_set<uint64_t> marker_tids;
  {
    std::unordered_map<uint64_t, ThreadInfo*> known;
    for (const ThreadInfo& t : model_.threads()) known[t.tid] = nullptr;
    for (const internal::MarkerRecord& m : model_.markers()) {
      marker_tids.insert(m.tid);
      auto [it, inserted] = known.emplace(m.tid, nullptr);
      if (inserted) {
        marker_only.push_back(std::make_unique<ThreadInfo>());
        it->second = marker_only.back().get();
        it->second->tid = m.tid;
        order.push_back(it->second);
      }
      if (ThreadInfo* t = it->second; t && (!t->start_ns || m.start_ns < *t->start_ns)) {
        t->start_ns = m.start_ns;
      }
    }
  }
  // The profile is the program's: the profiler's own threads are left out. The stopper and the
  // capture thread only wait (the sampler may still sample them); another inprof-* thread (a
  // program may name one so) is left out only when it has nothing to show.
  std::erase_if(order, [&](const ThreadInfo* t) {
    if (t->name == "inprof-stopper" || t->name == "inprof-capture") return true;
    return t->name.starts_with("inprof-") && t->samples.empty() && !marker_tids.contains(t->tid);
  });
  // The main thread first: the viewer shows threads in this order.
  std::stable_partition(order.begin(), order.end(), [](const ThreadInfo* t) { return t->is_main; });

  uint64_t pid = model_.process() ? model_.process()->pid : 0;
  const TrackNames names(model_.process() ? &*model_.process() : nullptr);
  for (const ThreadInfo* info : order) {
    Thread t;
    t.name = names.thread_name(info->tid, info->name, info->is_main);
    t.is_main = info->is_main;
    t.process_name = b_.meta().product;
    t.pid = pid;
    t.tid = info->tid;
    t.unregister_ns = info->end_ns;

    // Samples are nearly always in time order already; sort a copy only when they are not.
    std::vector<RawSample> sorted;
    if (!info->samples.in_time_order()) {
      sorted = info->samples.to_vector();
      std::stable_sort(sorted.begin(), sorted.end(), [](const RawSample& a, const RawSample& b) {
        return a.time_ns < b.time_ns;
      });
    }
    std::optional<uint64_t> first_time;
    Activity activity;
    activity.has_content = !info->samples.empty() || marker_tids.contains(info->tid);
    auto count = [&](const RawSample& s) {
      activity.cpu_ns += s.cpu_delta_ns.value_or(0);
      activity.samples += s.stack != kNoStack;
    };
    auto add = [&](const RawSample& s) {
      count(s);
      if (!first_time) first_time = s.time_ns;
      t.samples.push_back(
          {s.stack == kNoStack ? std::nullopt : stack_for(s.stack, s.time_ns, s.cpu_use), s.time_ns,
           s.cpu_delta_ns});
    };
    if (info->samples.in_time_order()) {
      // Every stack is built now (the tables are written before the samples), and the samples
      // are read again from the model when they are written: they are not copied.
      info->samples.for_each([&](const RawSample& s) {
        count(s);
        if (!first_time) first_time = s.time_ns;
        if (s.stack == kNoStack) return;
        uint32_t& slot = resolved_->slot(s);
        if (slot != 0) return;
        std::optional<StackIndex> stack = stack_for(s.stack, s.time_ns, s.cpu_use);
        slot = stack ? raw(*stack) + 1 : ResolvedStacks::kNone;
      });
      if (!info->samples.empty()) {  // (marker-only threads are gone after this function)
        t.samples.set_source(info->samples.size(),
                             [resolved = resolved_, list = &info->samples](const auto& sink) {
                               resolved->for_each(*list, sink);
                             });
      }
    } else {
      for (const RawSample& s : sorted) add(s);
    }
    if (info->start_ns) {
      t.register_ns = *info->start_ns;
    } else if (first_time) {
      t.register_ns = *first_time;
    }
    bool is_main = t.is_main;
    ThreadIndex index = b_.add_thread(std::move(t));
    thread_by_tid_.emplace(info->tid, index);
    if (is_main && !main_thread_) main_thread_ = index;
    activity_.push_back(activity);
  }
  choose_initial_threads();
}

void Converter::choose_initial_threads() {
  // Without a list the viewer hides threads it finds quiet (a database thread that mostly
  // waits, with all its markers); with one it shows exactly those listed.
  std::vector<uint32_t> shown;
  for (uint32_t i = 0; i < activity_.size(); ++i) {
    if (activity_[i].has_content) shown.push_back(i);
  }
  auto busier = [&](uint32_t a, uint32_t b) {
    const Activity &x = activity_[a], &y = activity_[b];
    return std::tie(x.cpu_ns, x.samples) > std::tie(y.cpu_ns, y.samples);
  };
  if (shown.size() > kMaxInitiallyVisibleThreads) {
    // Very many threads: the busiest ones (and the main thread, which leads its process).
    std::stable_sort(shown.begin(), shown.end(), busier);
    shown.resize(kMaxInitiallyVisibleThreads);
    if (main_thread_ && std::find(shown.begin(), shown.end(), raw(*main_thread_)) == shown.end()) {
      shown.back() = raw(*main_thread_);
    }
    std::sort(shown.begin(), shown.end());
  }
  if (shown.empty()) return;  // no thread: the viewer has nothing to show either way
  b_.meta().initial_visible_threads = shown;
  // The thread that used the most CPU (or has the most samples); the first such (the main thread
  // comes first) on a tie.
  uint32_t selected = shown[0];
  for (uint32_t i : shown) {
    if (busier(i, selected)) selected = i;
  }
  b_.meta().initial_selected_threads = {selected};
}

namespace {

const char* color_name(uint8_t color) {
  static const char* const kColors[] = {"grey",   "transparent", "purple",  "green", "orange",
                                        "yellow", "lightblue",   "blue",    "brown", "magenta",
                                        "red",    "lightred",    "darkgrey"};
  return color < std::size(kColors) ? kColors[color] : "grey";
}

const char* format_name(uint8_t format) {
  static const char* const kFormats[] = {"string",      "integer",   "decimal",      "bytes",
                                         "percentage",  "duration",  "milliseconds", "microseconds",
                                         "nanoseconds", "file-path", "url"};
  return format < std::size(kFormats) ? kFormats[format] : "string";
}

}  // namespace

void Converter::add_categories() {
  // Categories with a name the profile already has (Other, Idle) are merged into it, so there is
  // one grey Other at index 0 and one transparent Idle.
  std::map<std::string, CategoryIndex> by_name;
  for (size_t i = 0; i < b_.categories().size(); ++i) {
    by_name.emplace(b_.categories()[i].name, static_cast<CategoryIndex>(i));
  }
  for (const auto& [id, record] : model_.categories()) {
    std::string name = record.name.empty() ? "Category " + std::to_string(id) : record.name;
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      it =
          by_name.emplace(name, b_.add_category({name, color_name(record.color), {"Other"}})).first;
    }
    categories_[id] = it->second;
  }
}

CategoryIndex Converter::category(uint32_t dump_id) const {
  auto it = categories_.find(dump_id);
  return it == categories_.end() ? other_ : it->second;
}

void Converter::add_marker_schemas() {
  std::map<std::string, bool> written;
  for (const auto& [type, record] : model_.marker_schemas()) {
    std::string name = record.name.empty() ? "Type" + std::to_string(type) : record.name;
    schema_names_[type] = name;
    // Two types with one name (two copies of a library) share the first one's schema.
    if (!written.emplace(name, true).second) continue;
    MarkerSchema schema;
    schema.name = name;
    schema.display = {"marker-chart", "marker-table", "timeline-overview"};
    schema.chart_label = record.chart_label;
    schema.table_label = record.table_label;
    schema.tooltip_label = record.tooltip_label;
    schema.description = record.description;
    for (const internal::MarkerFieldRecord& f : record.fields) {
      schema.fields.push_back({f.key, f.label.empty() ? f.key : f.label, format_name(f.format)});
    }
    context_keys_[name] = add_context_fields(schema);
    b_.add_marker_schema(std::move(schema));
  }
}

const std::string& Converter::untyped_schema() {
  if (!untyped_schema_) {
    std::string name = "Marker";
    for (int n = 2; context_keys_.contains(name); ++n) name = "Marker " + std::to_string(n);
    MarkerSchema schema = untyped_marker_schema(name);
    context_keys_[name] = add_context_fields(schema);
    b_.add_marker_schema(std::move(schema));
    untyped_schema_ = name;
  }
  return *untyped_schema_;
}

std::optional<MarkerData> Converter::marker_data(const internal::MarkerRecord& m) {
  if (m.type == 0) return std::nullopt;
  auto schema = model_.marker_schemas().find(m.type);
  if (schema == model_.marker_schemas().end()) {
    ++untyped_markers_;
    return std::nullopt;
  }
  MarkerData data;
  data.type = schema_names_[m.type];
  const auto& fields = schema->second.fields;
  for (size_t i = 0; i < fields.size() && i < m.values.size(); ++i) {
    const internal::MarkerValue& v = m.values[i];
    MarkerValue value;
    switch (v.kind) {
      case internal::MarkerValue::kInteger:
        value = v.integer;
        break;
      case internal::MarkerValue::kDecimal:
        // JSON has no NaN or infinity.
        if (std::isfinite(v.decimal)) value = v.decimal;
        break;
      default:
        value = v.string;
        break;
    }
    data.fields.emplace_back(fields[i].key, std::move(value));
  }
  return data;
}

void Converter::add_markers() {
  // The viewer pairs interval starts and ends by name within one thread only; the library
  // matches them by name across threads. Pair them here, in time order, the latest open start
  // first (as the viewer does), and write each pair as one interval on the starting thread.
  std::vector<size_t> order(model_.markers().size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto& markers = model_.markers();
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return markers[a].start_ns < markers[b].start_ns; });
  std::map<std::string, std::vector<size_t>> open;  // interval starts by name
  struct Out {
    size_t record;
    std::optional<uint64_t> start, end;
    MarkerPhase phase;
    std::optional<size_t> end_record;  // the phase-3 record of a pair
  };
  std::vector<Out> out;
  out.reserve(markers.size());
  for (size_t i : order) {
    const internal::MarkerRecord& m = markers[i];
    switch (m.phase) {
      case 1:
        out.push_back({i, m.start_ns, std::max(m.start_ns, m.end_ns), MarkerPhase::kInterval, {}});
        break;
      case 2:
        open[m.name].push_back(out.size());
        out.push_back({i, m.start_ns, std::nullopt, MarkerPhase::kIntervalStart, {}});
        break;
      case 3: {
        auto it = open.find(m.name);
        if (it != open.end() && !it->second.empty()) {
          Out& start = out[it->second.back()];
          it->second.pop_back();
          start.end = std::max(*start.start, m.start_ns);
          start.phase = MarkerPhase::kInterval;
          start.end_record = i;
        } else {
          // Its start was lost (or came before the session): the viewer starts it at the
          // beginning of the profile.
          out.push_back({i, std::nullopt, m.start_ns, MarkerPhase::kIntervalEnd, {}});
        }
        break;
      }
      default:  // 0, and unknown phases as instants
        out.push_back({i, m.start_ns, std::nullopt, MarkerPhase::kInstant, {}});
        break;
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Out& a, const Out& b) {
    return a.start.value_or(a.end.value_or(0)) < b.start.value_or(b.end.value_or(0));
  });
  for (const Out& o : out) {
    const internal::MarkerRecord& m = markers[o.record];
    auto thread = thread_by_tid_.find(m.tid);
    if (thread == thread_by_tid_.end()) continue;  // cannot happen: add_threads made one
    MarkerTable& t = b_.thread(thread->second).markers;
    t.name.push_back(b_.handle_for_string(m.name));
    t.start_ns.push_back(o.start);
    t.end_ns.push_back(o.end);
    t.phase.push_back(o.phase);
    const CategoryIndex cat = category(m.category);
    t.category.push_back(cat);
    std::optional<MarkerData> data = marker_data(m);
    if (!data && o.end_record) data = marker_data(markers[*o.end_record]);
    // Every marker gets a payload: the viewer shows fields, colours and timeline entries only
    // for markers with one.
    if (!data) data = MarkerData{untyped_schema(), {}};
    add_context(*data, context_keys_.at(data->type), b_.categories()[raw(cat)], m.tid);
    t.data.push_back(std::move(data));
  }
  if (untyped_markers_) {
    diag_.warn(std::to_string(untyped_markers_) +
               " markers name a marker type the dump does not describe; their payload is dropped");
  }
}

void Converter::add_counters() {
  if (model_.counters().empty()) return;
  if (b_.threads().empty()) {
    diag_.warn("the dump has counters but no threads; the counters are left out");
    return;
  }
  uint64_t pid = model_.process() ? model_.process()->pid : 0;
  for (const CounterInfo& info : model_.counters()) {
    if (info.samples.empty()) continue;  // nothing to draw
    Counter c;
    const internal::CounterRecord& r = info.record;
    c.name = r.name.empty() ? "Counter " + std::to_string(r.id) : r.name;
    const Category& cat = b_.categories()[raw(category(r.category))];
    c.category = cat.name;
    c.color = std::string(graph_color_for(cat.color));
    c.description = r.description;
    c.pid = pid;
    c.main_thread = main_thread_.value_or(ThreadIndex{0});
    std::vector<internal::CounterSampleRecord> samples = info.samples;
    std::stable_sort(samples.begin(), samples.end(),
                     [](const auto& a, const auto& b) { return a.time_ns < b.time_ns; });
    const uint64_t interval = b_.meta().interval_ns;
    auto add = [&](uint64_t time_ns, int64_t value) {
      const int64_t previous = c.value.empty() ? 0 : c.value.back();
      c.time_ns.push_back(time_ns);
      // The viewer adds the counts up; the first one is the starting value.
      c.count.push_back(
          static_cast<int64_t>(static_cast<uint64_t>(value) - static_cast<uint64_t>(previous)));
      c.value.push_back(value);
    };
    for (const auto& s : samples) {
      // The library records a value only when it changed, but reads it at every tick: one tick
      // before a change it still had the previous value. Saying so draws a step; without it the
      // graph would slope from one change to the next as if the value moved in between.
      if (!c.value.empty() && s.time_ns > c.time_ns.back() + interval) {
        add(s.time_ns - interval, c.value.back());
      }
      add(s.time_ns, s.value);
    }
    // Unchanged since, up to the end of the recording: the library reads counters until it
    // stops, or until a pause that was never resumed.
    if (std::optional<uint64_t> end = model_.end_ns()) {
      for (const PauseRange& p : model_.pauses()) {
        if (!p.end_ns) end = std::min(*end, p.start_ns);
      }
      if (*end > c.time_ns.back()) add(*end, c.value.back());
    }
    b_.add_counter(std::move(c));
  }
}

void Converter::add_paused_ranges() {
  if (model_.pauses().empty()) return;
  // A pause left open ends with the profile.
  uint64_t profile_end = model_.end_ns().value_or(model_.last_time_ns());
  std::vector<PausedRange> ranges;
  for (const PauseRange& p : model_.pauses()) {
    ranges.push_back({p.start_ns, std::max(p.start_ns, p.end_ns.value_or(profile_end))});
  }
  // Sampling pauses for the whole process: every thread shows the same ranges.
  for (size_t i = 0; i < b_.threads().size(); ++i) {
    b_.thread(static_cast<ThreadIndex>(i)).paused_ranges = ranges;
  }
}

std::optional<StackIndex> Converter::stack_for(RawStackId id, uint64_t time_ns, CpuUse use) {
  // The result changes only when modules are loaded or unloaded (a new epoch).
  StackCacheEntry& entry = stack_cache_[id];
  size_t epoch = map_.epoch(time_ns);
  if (entry.epoch != epoch) {
    entry.stack = build_stack(model_.stack(id), time_ns);
    entry.epoch = epoch;
  }
  if (use == CpuUse::kMostly || !entry.stack) return entry.stack;
  StackCacheEntry& idle_entry = idle_stack_cache_[id];
  if (idle_entry.epoch != epoch) {
    const RawStack& raw = model_.stack(id);
    idle_entry.in_syscall = raw.frames.empty() ? std::nullopt : in_syscall(raw.frames[0], time_ns);
    // The viewer counts a sample as idle when its stack's category is Idle, and a stack takes
    // the category of its top frame: an idle sample gets an Idle frame of its own on top, and
    // every other frame keeps its category whatever the sample.
    idle_entry.stack =
        idle_entry.in_syscall == false
            ? entry.stack
            : b_.handle_for_stack(entry.stack, idle_frame(idle_entry.in_syscall.has_value()));
    idle_entry.epoch = epoch;
  }
  // Blocked: in a system call with little CPU time. Sampled elsewhere, it was runnable (waiting
  // for a CPU is not idle). Where the code cannot be read, only a thread that did not run at
  // all is taken as blocked.
  const bool idle = idle_entry.in_syscall ? *idle_entry.in_syscall : use == CpuUse::kNone;
  return idle ? idle_entry.stack : entry.stack;
}

std::optional<bool> Converter::in_syscall(uint64_t address, uint64_t time_ns) {
  const size_t m = map_.find(address, time_ns);
  if (syscall_size_ == 0 || m == ModuleMap::kNone || address < syscall_size_) return std::nullopt;
  auto [it, inserted] = modules_[m].syscall_sites.try_emplace(address);
  if (inserted) {
    uint8_t before[8];
    std::span<uint8_t> code(before, syscall_size_);
    const uint64_t vaddr = address - syscall_size_ - model_.modules()[m].record.load_bias;
    ModuleSymbolizer* sym = files(m) ? symbolizer(m) : nullptr;
    if (sym && sym->read_code(vaddr, code)) it->second = is_syscall_instruction(arch_, code);
  }
  return it->second;
}

FrameIndex Converter::idle_frame(bool blocked) {
  std::optional<FrameIndex>& frame = idle_frames_[blocked];
  if (!frame) {
    FuncIndex func =
        b_.handle_for_func(b_.handle_for_string(blocked ? "[blocked]" : "[not running]"),
                           std::nullopt, std::nullopt, std::nullopt);
    frame = b_.handle_for_frame(func, std::nullopt, 0, idle_, 0, std::nullopt, std::nullopt);
  }
  return *frame;
}

FrameIndex Converter::label_frame(const internal::SampleLabel& label) {
  const std::string* text = model_.string(label.string_id);
  std::string name = text ? *text : "[label " + std::to_string(label.string_id) + "]";
  FuncIndex func =
      b_.handle_for_func(b_.handle_for_string(name), std::nullopt, std::nullopt, std::nullopt);
  return b_.handle_for_frame(func, std::nullopt, 0, category(label.category), 0, std::nullopt,
                             std::nullopt);
}

std::optional<StackIndex> Converter::build_stack(const RawStack& raw, uint64_t time_ns) {
  std::span<const uint64_t> addresses(raw.frames);
  std::vector<uint64_t> with_caller;  // the frames with a leaf's caller put back, if missing
  bool inserted_caller = false;
  if (fix_leaves_ && (raw.flags & internal::kSampleFramePointerWalk) && !addresses.empty() &&
      !raw.leaf_candidates.empty()) {
    uint64_t leaf = addresses[0];
    size_t m = map_.find(leaf, time_ns);
    if (m != ModuleMap::kNone) {
      ModuleState& state = modules_[m];
      auto it = state.return_slots.find(leaf);
      if (it == state.return_slots.end()) {
        std::optional<unsigned> slot;
        if (ModuleSymbolizer* sym = symbolizer(m)) {
          slot = sym->return_address_slot(leaf - model_.modules()[m].record.load_bias,
                                          arch_ == "aarch64");
        }
        it = state.return_slots.emplace(leaf, slot).first;
      }
      if (auto caller = missing_leaf_caller(raw.frames, raw.leaf_candidates, it->second)) {
        with_caller = raw.frames;
        with_caller.insert(with_caller.begin() + 1, *caller);
        addresses = with_caller;
        inserted_caller = true;
        ++summary_.leaf_callers_inserted;
      }
    }
  }

  // Labels in recording order: an earlier one at the same position is the outer one.
  std::vector<LabelView> labels;
  for (const internal::SampleLabel& l : raw.labels) {
    uint32_t position = std::min<uint32_t>(l.position, static_cast<uint32_t>(raw.frames.size()));
    // The walk had merged the leaf's frame with its caller's: a label counted in the leaf's
    // frame (position 0) really lives in the caller, and every later frame moved down by one.
    if (inserted_caller) ++position;
    labels.push_back({position, label_frame(l)});
  }
  auto push_labels_at = [&](size_t position, std::optional<StackIndex>& prefix) {
    for (const LabelView& l : labels) {
      if (l.position == position) prefix = b_.handle_for_stack(prefix, l.frame);
    }
  };

  std::optional<StackIndex> prefix;
  if (raw.flags & (internal::kSampleTruncatedCopy | internal::kSampleDepthLimit)) {
    prefix = b_.handle_for_stack(std::nullopt, truncated_frame());
  }
  // A label at position p sits between frames[p] (its caller) and frames[p - 1]; position ==
  // frame count puts it above the outermost frame.
  push_labels_at(addresses.size(), prefix);
  for (size_t i = addresses.size(); i-- > 0;) {
    const FrameRun run = frames_for(addresses[i], i == 0, time_ns);
    for (uint32_t k = run.begin; k < run.end; ++k) {
      prefix = b_.handle_for_stack(prefix, frame_pool_[k]);
    }
    push_labels_at(i, prefix);
  }
  return prefix;
}

FrameIndex Converter::truncated_frame() {
  if (!truncated_frame_) {
    FuncIndex func = b_.handle_for_func(b_.handle_for_string("[truncated stack]"), std::nullopt,
                                        std::nullopt, std::nullopt);
    truncated_frame_ =
        b_.handle_for_frame(func, std::nullopt, 0, other_, 0, std::nullopt, std::nullopt);
  }
  return *truncated_frame_;
}

Converter::FrameRun Converter::frames_for(uint64_t address, bool leaf, uint64_t time_ns) {
  const size_t m = map_.find(code_address(address, leaf), time_ns);
  FlatKeyMap& runs =
      m == ModuleMap::kNone ? unmapped_frame_runs_[leaf] : modules_[m].frame_runs[leaf];
  return frame_runs_[runs.get_or_make(address, [&] {
    const auto begin = static_cast<uint32_t>(frame_pool_.size());
    make_frames(m, address, leaf);
    frame_runs_.push_back({begin, static_cast<uint32_t>(frame_pool_.size())});
    return static_cast<uint32_t>(frame_runs_.size() - 1);
  })];
}

void Converter::make_frames(size_t m, uint64_t address, bool leaf) {
  if (m == ModuleMap::kNone) {
    // Code in no module may be a JIT's (node, python -X perf). Its frames get no library: the
    // map gives names only, and a library would invite the viewer to symbolicate it.
    const uint64_t lookup = code_address(address, leaf);
    if (const std::string* name = jit_ ? model_.jit_map().find(lookup) : nullptr) {
      FuncIndex func =
          b_.handle_for_func(b_.handle_for_string(*name), std::nullopt, std::nullopt, std::nullopt);
      ++summary_.jit_frames;
      frame_pool_.push_back(
          b_.handle_for_frame(func, std::nullopt, 0, *jit_, 0, std::nullopt, std::nullopt));
      return;
    }
    FuncIndex func = b_.handle_for_func(b_.handle_for_string(hex_u64(address)), std::nullopt,
                                        std::nullopt, std::nullopt);
    frame_pool_.push_back(
        b_.handle_for_frame(func, std::nullopt, 0, native_, 0, std::nullopt, std::nullopt));
    return;
  }
  const internal::ModuleRecord& rec = model_.modules()[m].record;
  LibIndex lib_index = lib(m);
  ResourceIndex resource = b_.resource_for_lib(lib_index);
  const uint64_t lookup = code_address(address, leaf);
  const uint64_t relative = lookup - rec.start;

  if (files(m)) {
    const AddressSymbol& info = *symbol_for(m, lookup - rec.load_bias);
    if (!info.frames.empty()) {
      ModuleState& state = modules_[m];
      std::optional<NativeSymbolIndex> native;
      if (info.symbol) {
        uint64_t start = info.symbol->vaddr + rec.load_bias;
        if (start >= rec.start && start < rec.end) {
          // By its address alone, as the table keys it: its name is hashed only once.
          native = static_cast<NativeSymbolIndex>(state.native_symbols.get_or_make(start, [&] {
            return raw(b_.handle_for_native_symbol(lib_index, start - rec.start,
                                                   b_.handle_for_string(info.symbol->name),
                                                   info.symbol->size));
          }));
        }
      }
      for (size_t depth = 0; depth < info.frames.size(); ++depth) {
        const SourceFrame& f = info.frames[depth];
        auto make_func = [&] {
          std::optional<SourceIndex> source;
          if (!f.file.empty()) source = b_.handle_for_source(f.file);
          return b_.handle_for_func(
              b_.handle_for_string(f.function), resource, source,
              f.decl_line ? std::optional<uint32_t>(f.decl_line) : std::nullopt);
        };
        const FuncIndex func = f.function_key
                                   ? static_cast<FuncIndex>(state.funcs.get_or_make(
                                         f.function_key, [&] { return raw(make_func()); }))
                                   : make_func();
        frame_pool_.push_back(
            b_.handle_for_frame(func, relative, static_cast<uint32_t>(depth), native_, 0, native,
                                f.line ? std::optional<uint32_t>(f.line) : std::nullopt));
      }
      return;
    }
  }
  // Named by the address the dump holds, as other tools print a return address.
  std::string name = b_.libs()[raw(lib_index)].name + "+" + hex_u64(address - rec.start);
  FuncIndex func =
      b_.handle_for_func(b_.handle_for_string(name), resource, std::nullopt, std::nullopt);
  frame_pool_.push_back(
      b_.handle_for_frame(func, relative, 0, native_, 0, std::nullopt, std::nullopt));
}

const ModuleFiles* Converter::files(size_t m) {
  ModuleState& state = modules_[m];
  if (!state.located) {
    state.located = true;
    const internal::ModuleRecord& rec = model_.modules()[m].record;
    state.files = locate_module_files(rec, options_.locate, &state.why);
    if (!state.files && !(rec.flags & internal::kModuleVdso)) {
      diag_.warn("module '" + rec.path + "': " + state.why + "; its frames stay unsymbolicated");
    }
  }
  return state.files ? &*state.files : nullptr;
}

ModuleSymbolizer* Converter::symbolizer(size_t m) {
  ModuleState& state = modules_[m];
  if (!state.opened) {
    state.opened = true;
    // A handle that symbolized ahead knows the module's units already.
    if (!state.batch.handles.empty()) {
      state.symbolizer = std::move(state.batch.handles.back());
      state.batch.handles.pop_back();
      return state.symbolizer.get();
    }
    if (const ModuleFiles* f = files(m)) {
      state.symbolizer = ModuleSymbolizer::open(*f, &state.why);
      if (!state.symbolizer) {
        diag_.warn("module '" + model_.modules()[m].record.path + "': " + state.why +
                   "; its frames stay unsymbolicated");
      }
    }
  }
  return state.symbolizer.get();
}

const AddressSymbol* Converter::symbol_for(size_t m, uint64_t vaddr) {
  static const AddressSymbol kNothing;
  ModuleState& state = modules_[m];
  const ModuleAddresses& batch = state.batch;
  auto it = std::lower_bound(batch.vaddrs.begin(), batch.vaddrs.end(), vaddr);
  if (it != batch.vaddrs.end() && *it == vaddr) {
    size_t i = static_cast<size_t>(it - batch.vaddrs.begin());
    if (batch.done[i]) return &batch.results[i];
  }
  // Not looked up ahead (a caller the leaf fix-up inserted): do it here.
  ModuleSymbolizer* sym = symbolizer(m);
  return sym ? &sym->lookup(vaddr) : &kNothing;
}

void Converter::symbolize_ahead() {
  // Every distinct address of every sampled stack, per module, at each module epoch it was
  // sampled in; then all of them at once, on every core.
  std::unordered_set<uint64_t> seen;  // (epoch << 32) | stack
  std::vector<std::vector<uint64_t>> wanted(modules_.size());
  for (const ThreadInfo& t : model_.threads()) {
    t.samples.for_each([&](const RawSample& s) {
      if (s.stack == kNoStack) return;
      size_t epoch = map_.epoch(s.time_ns);
      if (!seen.insert((uint64_t(epoch) << 32) | s.stack).second) return;
      const std::vector<uint64_t>& frames = model_.stack(s.stack).frames;
      for (size_t i = 0; i < frames.size(); ++i) {
        const uint64_t lookup = code_address(frames[i], i == 0);
        size_t m = map_.find(lookup, s.time_ns);
        if (m == ModuleMap::kNone) continue;
        wanted[m].push_back(lookup - model_.modules()[m].record.load_bias);
      }
    });
  }
  std::vector<ModuleAddresses> batches;
  std::vector<size_t> batch_module;
  for (size_t m = 0; m < modules_.size(); ++m) {
    if (wanted[m].empty()) continue;
    std::vector<uint64_t>& v = wanted[m];
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    modules_[m].addresses = v.size();
    summary_.unique_addresses += v.size();
    if (!files(m)) continue;
    ModuleAddresses batch;
    batch.files = *modules_[m].files;
    batch.vaddrs = std::move(v);
    std::vector<uint64_t>().swap(wanted[m]);
    batches.push_back(std::move(batch));
    batch_module.push_back(m);
  }
  auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();  // the process's CPU time, every thread's
  symbolize_in_parallel(batches, options_.jobs, options_.progress,
                        options_.min_addresses_per_handle);
  summary_.symbolize_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  summary_.symbolize_cpu_seconds = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  summary_.threads = effective_jobs(options_.jobs);
  for (size_t i = 0; i < batches.size(); ++i) {
    ModuleState& state = modules_[batch_module[i]];
    state.files->debug_image = batches[i].files.debug_image;  // for this thread's own handle
    state.batch = std::move(batches[i]);
  }
}

void Converter::report_modules() {
  for (size_t m = 0; m < modules_.size(); ++m) {
    const ModuleState& state = modules_[m];
    if (!state.located) continue;
    const internal::ModuleRecord& rec = model_.modules()[m].record;
    ++summary_.modules_used;
    ModuleReport r;
    r.path = rec.path;
    r.build_id = hex_string(rec.build_id);
    r.addresses = state.addresses;
    if (state.files && !(state.opened && !state.symbolizer)) {
      ++summary_.modules_symbolicated;
      const ModuleFiles& f = *state.files;
      r.status = f.debug.empty() ? ModuleReport::kSymbolsOnly : ModuleReport::kDwarf;
      r.source = f.debug.empty() ? f.binary : f.debug;
      r.detail = f.origin;
      r.rejected = f.rejected;
    } else {
      r.detail = state.why;
    }
    summary_.modules.push_back(std::move(r));
  }
}

LibIndex Converter::lib(size_t m) {
  ModuleState& state = modules_[m];
  if (state.lib) return *state.lib;
  const internal::ModuleRecord& rec = model_.modules()[m].record;
  // The same file mapped again (dlclose + dlopen) is the same library.
  auto key = std::make_tuple(rec.path, hex_string(rec.build_id), rec.file_offset);
  auto it = lib_by_file_.find(key);
  if (it == lib_by_file_.end()) {
    Lib lib;
    lib.path = mapped_path(rec, files(m));
    lib.name = basename_of(lib.path);
    // The Firefox Profiler asks symbol servers for a library by debugName + breakpadId; an ELF
    // file's debug name is its own file name (as samply writes it), not its soname.
    lib.debug_name = lib.name;
    lib.debug_path = lib.path;
    lib.breakpad_id = breakpad_id(rec.build_id);
    if (model_.process() && model_.process()->os == "windows" && rec.build_id.size() == 20) {
      // A PDB debug id: the GUID, then its age (FORMAT.md, "Modules"), which is not always 0.
      uint32_t age = 0;
      for (int b = 3; b >= 0; --b) age = age << 8 | rec.build_id[16 + b];
      char text[16];
      std::snprintf(text, sizeof text, "%X", age);
      lib.breakpad_id.replace(32, std::string::npos, text);
    }
    if (!rec.build_id.empty()) lib.code_id = hex_string(rec.build_id);
    lib.arch = arch_;
    it = lib_by_file_.emplace(key, b_.add_lib(std::move(lib))).first;
  }
  state.lib = it->second;
  return it->second;
}

}  // namespace

std::string hex_string(const std::vector<uint8_t>& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

std::string breakpad_id(const std::vector<uint8_t>& build_id) {
  // The first 16 bytes as a GUID whose first three fields are little-endian, then age 0.
  uint8_t g[16] = {};
  std::copy_n(build_id.begin(), std::min<size_t>(16, build_id.size()), g);
  const int order[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
  static const char kDigits[] = "0123456789ABCDEF";
  std::string s;
  for (int i : order) {
    s += kDigits[g[i] >> 4];
    s += kDigits[g[i] & 15];
  }
  return s + "0";
}

ConversionSummary convert_profile(const ProfileModel& model, ProfileBuilder& builder,
                                  Diagnostics& diag, const ConvertOptions& options) {
  auto converter = std::make_unique<Converter>(model, builder, diag, options);
  ConversionSummary summary = converter->run();
  // Freeing python3.11's handles and 50,000 addresses' frames took 5 % of a run.
  if (options.exiting_after) (void)converter.release();
  return summary;
}

}  // namespace inprof::symbolicate
