#include "convert/profile_converter.h"

#include <algorithm>
#include <cctype>
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

#include "convert/allocation_converter.h"
#include "convert/converter.h"
#include "convert/graph_color.h"
#include "convert/marker_context.h"
#include "convert/overhead_converter.h"
#include "convert/sample_weight.h"
#include "convert/stack_converter.h"
#include "convert/track_names.h"
#include "symbolize/module_map.h"
#include "symbolize/module_symbolizer.h"

namespace inprof::symbolicate {

ConversionSummary Converter::run() {
  const CategoryIndex other = b_.add_category({"Other", "grey", {"Other"}});
  const CategoryIndex native = b_.add_category({"Native", "blue", {"Other"}});
  // The viewer finds idle samples by this exact name.
  const CategoryIndex idle = b_.add_category({"Idle", "transparent", {"Other"}});
  std::optional<CategoryIndex> jit;  // only when the dump has a JIT map
  if (!model_.jit_map().empty()) jit = b_.add_category({"JIT", "green", {"Other"}});
  stacks_.set_categories(other, native, idle, jit, add_categories());
  add_meta();
  const JitMap& jit_map = model_.jit_map();
  if (jit_map.malformed_lines()) {
    diag_.info("JIT map: " + std::to_string(jit_map.malformed_lines()) +
               " malformed lines skipped");
  }
  if (jit_map.dropped_lines()) {
    diag_.warn("JIT map: " + std::to_string(jit_map.dropped_lines()) +
               " lines dropped over the size limits; their code stays unnamed");
  }
  stacks_.symbolize_ahead();
  add_threads();
  // Samples that are not complete, as Profile Info shows them (each also says so as its root).
  Meta& meta = b_.meta();
  meta.extra.push_back({"Samples marked truncated", marked_[StackConverter::kMarkTruncated]});
  meta.extra.push_back(
      {"Samples without a stack (registers only)", marked_[StackConverter::kMarkNoStack]});
  meta.extra.push_back(
      {"Samples whose unwind stopped early", marked_[StackConverter::kMarkUnwindStopped]});
  add_weight_facts();
  add_marker_schemas();
  add_markers();
  add_wait_markers();
  add_counters();
  if (auto overhead = profiler_overhead(model_, model_.process() ? model_.process()->pid : 0,
                                        main_thread_.value_or(ThreadIndex{0}));
      overhead && !b_.threads().empty()) {
    b_.add_overhead(std::move(*overhead));
  }
  add_allocations();
  add_paused_ranges();
  stacks_.save_cache();
  stacks_.report_modules();
  return summary_;
}

namespace {

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

}  // namespace

void Converter::add_meta() {
  Meta& meta = b_.meta();
  meta.has_cpu_deltas = model_.any_cpu_delta();
  // Times are relative to the session's start, so the session spans [0, its last record].
  uint64_t end = model_.end_ns().value_or(0);
  end = std::max(end, model_.last_time_ns());
  if (end > 0) meta.profiling_end_ns = end;
  if (const auto& c = model_.capture(); c && c->reason == internal::CaptureReason::kRotation) {
    // One window of a rotating stream: its time range.
    meta.profiling_start_ns = c->start_ns;
    meta.profiling_end_ns = std::max(c->end_ns, c->start_ns);
    meta.extra.push_back({"Capture", std::string("rotating stream, one window")});
    meta.extra.push_back(
        {"Window (ms since start)",
         std::to_string(c->start_ns / 1000000) + " to " + std::to_string(c->end_ns / 1000000)});
  } else if (c) {
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
    if (s->sleep_stacks_unread) {
      meta.extra.push_back(
          {"Threads whose last wait was not read (a wake storm, over the "
           "profiler's budget: counted in the wait before it)",
           s->sleep_stacks_unread});
    }
    meta.extra.push_back(
        {"Profiler's own CPU (sampler and writer threads)",
         profiler_cpu_text(s->profiler_cpu_ns, model_.end_ns()) + tick_cost_text(*s)});
    if (s->sampler_cut_at_exit) {
      meta.extra.push_back({"Samples missing at exit", "the sampler's last tick (no CPU for it)"});
    }
    if (std::string rings = kernel_rings_text(*s); !rings.empty()) {
      rings[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(rings[0])));
      meta.extra.push_back({"Sampling without kernel rings", rings});
    }
  }
  meta.extra.push_back({"Samples in this profile", uint64_t(model_.sample_count())});
  meta.extra.push_back({"Dump complete", model_.end_ns().has_value()});
}

// The threads to show, main thread first: every thread sampled, and those that only have markers
// (recorded while never sampled), which `marker_only` then owns; the profiler's own left out.
std::vector<const ThreadInfo*> Converter::thread_order(
    std::vector<std::unique_ptr<ThreadInfo>>& marker_only,
    std::unordered_set<uint64_t>& marker_tids) {
  std::vector<const ThreadInfo*> order;
  for (const ThreadInfo& t : model_.threads()) order.push_back(&t);
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
  // The profile is the program's: the profiler's own threads are left out. The stopper and the
  // capture thread only wait (the sampler may still sample them); another inprof-* thread (a
  // program may name one so) is left out only when it has nothing to show.
  std::erase_if(order, [&](const ThreadInfo* t) {
    if (t->name == "inprof-stopper" || t->name == "inprof-capture") return true;
    return t->name.starts_with("inprof-") && t->samples.empty() && !marker_tids.contains(t->tid);
  });
  // The main thread first: the viewer shows threads in this order.
  std::stable_partition(order.begin(), order.end(), [](const ThreadInfo* t) { return t->is_main; });
  return order;
}

void Converter::add_threads() {
  std::vector<std::unique_ptr<ThreadInfo>> marker_only;
  std::unordered_set<uint64_t> marker_tids;
  const std::vector<const ThreadInfo*> order = thread_order(marker_only, marker_tids);
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
    Activity activity;
    activity.has_markers = marker_tids.contains(info->tid);
    activity.has_content = !info->samples.empty() || activity.has_markers;
    const std::optional<uint64_t> first_time = add_samples(*info, t, activity);
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

// Builds the stacks of `info`'s samples and gives `t` its samples; counts what the thread did
// into `activity`. Returns the time of its first sample.
std::optional<uint64_t> Converter::add_samples(const ThreadInfo& info, Thread& t,
                                               Activity& activity) {
  std::optional<uint64_t> first_time;
  auto count = [&](const RawSample& s) {
    activity.cpu_ns += s.cpu_delta_ns.value_or(0);
    activity.samples += s.stack != kNoStack;
    if (s.stack != kNoStack) ++marked_[StackConverter::mark_for(model_.stack(s.stack).flags)];
    if (!first_time) first_time = s.time_ns;
  };
  if (!info.samples.in_time_order()) {
    // Samples are nearly always in time order already; sort a copy only when they are not.
    std::vector<RawSample> sorted = info.samples.to_vector();
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const RawSample& a, const RawSample& b) { return a.time_ns < b.time_ns; });
    for (const RawSample& s : sorted) {
      count(s);
      t.samples.push_back(
          {s.stack == kNoStack ? std::nullopt : stacks_.stack_for(s.stack, s.time_ns, s.cpu_use),
           s.time_ns, s.cpu_delta_ns});
    }
    return first_time;
  }
  // Every stack is built now (the tables are written before the samples), and the samples are
  // read again from the model when they are written: they are not copied.
  info.samples.for_each([&](const RawSample& s) {
    count(s);
    if (s.stack == kNoStack) return;
    uint32_t& slot = resolved_->slot(s);
    if (slot != 0) return;
    std::optional<StackIndex> stack = stacks_.stack_for(s.stack, s.time_ns, s.cpu_use);
    slot = stack ? raw(*stack) + 1 : ResolvedStacks::kNone;
  });
  if (!info.samples.empty()) {  // (marker-only threads are gone after add_threads())
    t.samples.set_source(info.samples.size(),
                         [resolved = resolved_, list = &info.samples](const auto& sink) {
                           resolved->for_each(*list, sink);
                         });
  }
  return first_time;
}

void Converter::add_weight_facts() {
  // What the profile shows beside the dump's own samples (ProfileModel::added_samples()).
  b_.meta().extra.push_back(
      {"Samples added in long sleeps and for CPU run unseen", model_.added_samples()});
  if (!b_.meta().has_cpu_deltas) return;
  // The viewer's idle test (write/stack_walk.h's is_idle_leaf): the leaf frame's category.
  auto idle = [&](StackIndex stack) {
    const FrameIndex leaf = b_.stacks().frame[raw(stack)];
    return b_.categories()[raw(b_.frames().category[raw(leaf)])].name == "Idle";
  };
  uint64_t unknown = 0, capped = 0, unrepresented_ns = 0;
  for (const Thread& t : b_.threads()) {
    SampleWeigher weigher(b_.meta(), t);
    t.samples.for_each(
        [&](const SampleTable::Sample& s) { weigher.weight_ns(s, s.stack && idle(*s.stack)); });
    unknown += weigher.cpu_unknown();
    capped += weigher.capped();
    unrepresented_ns += weigher.unrepresented_ns();
  }
  Meta& meta = b_.meta();
  meta.extra.push_back({"On-CPU samples weighted one interval (CPU time unknown)", unknown});
  // The CPU a sample carried beyond 16 intervals is under [ran between samples]
  // (ProfileModel::push_sample); only what is past its most pieces is not represented.
  meta.extra.push_back({"On-CPU samples after a gap of more than " +
                            std::to_string(SampleWeigher::kMaxIntervals) + " intervals",
                        model_.gap_samples() + capped});
  meta.extra.push_back(
      {"On-CPU time in those gaps, under [ran between samples] (µs)",
       (model_.gap_cpu_ns() - std::min(model_.gap_cpu_ns(), unrepresented_ns) + 500) / 1000});
  meta.extra.push_back(
      {"On-CPU time in those gaps not represented (µs)", (unrepresented_ns + 500) / 1000});
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
  if (shown.size() > kFewThreads) {
    // More than a few: threads that used almost no CPU (under 1 % of one CPU over the profile)
    // and have no markers start hidden, one click away (20 threads that never ran put the one
    // that worked 17 tracks down). The main thread leads its process and stays.
    const uint64_t span = std::max<uint64_t>(model_.last_time_ns(), 1);
    std::vector<uint32_t> working;
    for (uint32_t i : shown) {
      const Activity& a = activity_[i];
      if (a.has_markers || a.cpu_ns * 100 >= span || (main_thread_ && i == raw(*main_thread_))) {
        working.push_back(i);
      }
    }
    if (!working.empty()) shown = working;
  }
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

void Converter::add_allocations() {
  if (model_.allocations().empty() && !model_.allocation_stats()) return;
  Counter memory;
  memory.name = "Memory";
  memory.category = "Memory";  // the viewer draws a counter of this category as the memory track
  memory.description = "Estimated live bytes of the sampled allocations";
  memory.unit = "bytes";
  memory.color = "orange";
  memory.pid = model_.process() ? model_.process()->pid : 0;
  memory.main_thread = main_thread_.value_or(ThreadIndex{0});
  const AllocationFacts facts = convert_allocations(
      model_, thread_by_tid_,
      [&](RawStackId stack, uint64_t time_ns) {
        return stacks_.stack_for(stack, time_ns, CpuUse::kUnknown);
      },
      b_, &memory);
  if (!memory.time_ns.empty() && !b_.threads().empty()) b_.add_counter(std::move(memory));
  Meta& meta = b_.meta();
  if (const auto& s = model_.allocation_stats()) {
    meta.extra.push_back(
        {"Allocation sampling (mean bytes between samples)", s->sample_bytes, /*setting=*/true});
    meta.extra.push_back({"Allocations sampled", s->sampled});
    meta.extra.push_back({"Allocation records dropped", s->dropped});
    meta.extra.push_back({"Allocations whose free is not tracked", s->untracked});
  }
  meta.extra.push_back({"Allocations in this profile", facts.allocations});
  meta.extra.push_back({"Frees matched to their allocation", facts.matched_frees});
  meta.extra.push_back({"Frees with no allocation in the profile", facts.unmatched_frees});
  if (facts.synthetic_frees != 0) {
    diag_.info(std::to_string(facts.synthetic_frees) +
               " sampled blocks were allocated again before their free was seen");
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
    const Category& cat = b_.categories()[raw(stacks_.category(r.category))];
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
