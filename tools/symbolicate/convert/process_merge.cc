#include "convert/process_merge.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

namespace inprof::symbolicate {
namespace {

constexpr size_t kMaxTrackName = 60;

// One part's rows re-added to the merged tables (which deduplicate them), index by index.
class PartCopier {
 public:
  PartCopier(const ProfileBuilder& in, ProfileBuilder& out, uint64_t shift_ns,
             std::map<std::string, CategoryIndex>& categories,
             std::map<std::pair<std::string, std::string>, LibIndex>& libs)
      : shift_(shift_ns) {
    for (const Category& c : in.categories()) {
      auto it = categories.find(c.name);
      if (it == categories.end()) it = categories.emplace(c.name, out.add_category(c)).first;
      category_.push_back(it->second);
    }
    for (const Lib& l : in.libs()) {
      auto key = std::make_pair(l.path, l.breakpad_id);
      auto it = libs.find(key);
      if (it == libs.end()) it = libs.emplace(key, out.add_lib(l)).first;
      lib_.push_back(it->second);
    }
    for (const std::string& s : in.strings()) string_.push_back(out.handle_for_string(s));
    const ResourceTable& r = in.resources();
    for (size_t i = 0; i < r.size(); ++i) {
      resource_.push_back(out.resource_for_lib(lib_[raw(r.lib[i])]));
    }
    const SourceTable& src = in.sources();
    for (size_t i = 0; i < src.size(); ++i) {
      source_.push_back(out.handle_for_source(in.strings()[raw(src.filename[i])]));
    }
    const FuncTable& f = in.funcs();
    for (size_t i = 0; i < f.size(); ++i) {
      std::optional<ResourceIndex> resource;
      if (f.resource[i]) resource = resource_[raw(*f.resource[i])];
      std::optional<SourceIndex> source;
      if (f.source[i]) source = source_[raw(*f.source[i])];
      func_.push_back(out.handle_for_func(str(f.name[i]), resource, source, f.line_number[i]));
    }
    const NativeSymbolTable& n = in.native_symbols();
    for (size_t i = 0; i < n.size(); ++i) {
      native_.push_back(out.handle_for_native_symbol(lib_[raw(n.lib[i])], n.address[i],
                                                     str(n.name[i]), n.function_size[i]));
    }
    const FrameTable& fr = in.frames();
    for (size_t i = 0; i < fr.size(); ++i) {
      std::optional<NativeSymbolIndex> native;
      if (fr.native_symbol[i]) native = native_[raw(*fr.native_symbol[i])];
      frame_.push_back(out.handle_for_frame(func_[raw(fr.func[i])], fr.address[i],
                                            fr.inline_depth[i], cat(fr.category[i]),
                                            fr.subcategory[i], native, fr.line[i]));
    }
    const StackTable& st = in.stacks();
    for (size_t i = 0; i < st.size(); ++i) {  // a prefix always comes before its stack
      std::optional<StackIndex> prefix;
      if (st.prefix[i]) prefix = stack_[raw(*st.prefix[i])];
      stack_.push_back(out.handle_for_stack(prefix, frame_[raw(st.frame[i])]));
    }
  }

  StringIndex str(StringIndex i) const { return string_[raw(i)]; }
  CategoryIndex cat(CategoryIndex i) const { return category_[raw(i)]; }
  uint64_t time(uint64_t t) const { return t + shift_; }

  Thread thread(const Thread& t, const std::string& process_name) const {
    Thread copy;
    copy.name = t.name;
    copy.is_main = t.is_main;
    copy.process_name = process_name;
    copy.pid = t.pid;
    copy.tid = t.tid;
    copy.register_ns = time(t.register_ns);
    if (t.unregister_ns) copy.unregister_ns = time(*t.unregister_ns);
    for (const PausedRange& p : t.paused_ranges) {
      copy.paused_ranges.push_back({time(p.start_ns), time(p.end_ns)});
    }
    t.samples.for_each([&](const SampleTable::Sample& s) {
      std::optional<StackIndex> stack;
      if (s.stack) stack = stack_[raw(*s.stack)];
      copy.samples.push_back({stack, time(s.time_ns), s.cpu_delta_ns});
    });
    const MarkerTable& m = t.markers;
    for (size_t i = 0; i < m.size(); ++i) {
      copy.markers.name.push_back(str(m.name[i]));
      copy.markers.start_ns.push_back(m.start_ns[i] ? std::optional(time(*m.start_ns[i]))
                                                    : std::nullopt);
      copy.markers.end_ns.push_back(m.end_ns[i] ? std::optional(time(*m.end_ns[i])) : std::nullopt);
      copy.markers.phase.push_back(m.phase[i]);
      copy.markers.category.push_back(cat(m.category[i]));
      std::optional<MarkerData> data = m.data[i];
      if (data && data->cause_stack) {
        data->cause_stack = stack_[raw(*data->cause_stack)];
        data->cause_ns = time(data->cause_ns);
      }
      copy.markers.data.push_back(std::move(data));
    }
    return copy;
  }

 private:
  uint64_t shift_;
  std::vector<CategoryIndex> category_;
  std::vector<LibIndex> lib_;
  std::vector<StringIndex> string_;
  std::vector<ResourceIndex> resource_;
  std::vector<SourceIndex> source_;
  std::vector<FuncIndex> func_;
  std::vector<NativeSymbolIndex> native_;
  std::vector<FrameIndex> frame_;
  std::vector<StackIndex> stack_;
};

}  // namespace

std::string process_track_name(const Meta& meta) {
  // The command line as typed (argv[0] without its directory), not the executable: `sh` rather
  // than `dash`, `python3 script.py` rather than `python3.11`.
  const std::string& args = meta.arguments;
  if (args.empty()) return meta.product;
  const size_t space = std::min(args.find(' '), args.size());
  const std::string program = args.substr(0, space);
  std::string name = program.substr(program.rfind('/') + 1) + args.substr(space);
  if (name.size() > kMaxTrackName) name = name.substr(0, kMaxTrackName - 3) + "...";
  return name;
}

// The run's counts (samples, losses, marks: the numbers Profile Info shows) are the sums of its
// processes' (each dump counts its own); a setting (a sampling rate) is the processes' common
// value, or says it differs; the run is complete when every dump is. Other entries are the first
// process's.
void add_counts(const Meta& part, Meta& run) {
  for (const ExtraEntry& e : part.extra) {
    auto it = std::find_if(run.extra.begin(), run.extra.end(),
                           [&](const ExtraEntry& r) { return r.label == e.label; });
    if (const auto* n = std::get_if<uint64_t>(&e.value)) {
      if (it == run.extra.end()) {
        run.extra.push_back(e);
      } else if (auto* sum = std::get_if<uint64_t>(&it->value); sum && !e.setting) {
        *sum += *n;
      } else if (sum && *sum != *n) {
        it->value = std::string("differs by process");
      }
    } else if (const auto* b = std::get_if<bool>(&e.value); b && e.label == "Dump complete") {
      if (it == run.extra.end()) {
        run.extra.push_back(e);
      } else if (auto* all = std::get_if<bool>(&it->value)) {
        *all = *all && *b;
      }
    }
  }
}

void merge_processes(const std::vector<const ProfileBuilder*>& unordered, ProfileBuilder& out) {
  std::vector<const ProfileBuilder*> parts = unordered;
  std::stable_sort(parts.begin(), parts.end(), [](const auto* a, const auto* b) {
    return a->meta().start_unix_ns < b->meta().start_unix_ns;
  });
  if (parts.empty()) return;
  const Meta& lead = parts[0]->meta();
  const uint64_t start = lead.start_unix_ns;
  Meta& meta = out.meta();
  meta = lead;
  meta.initial_visible_threads.reset();
  meta.initial_selected_threads.reset();
  meta.extra.push_back({"Processes", uint64_t(parts.size())});

  std::map<std::string, CategoryIndex> categories;
  std::map<std::pair<std::string, std::string>, LibIndex> libs;
  std::map<std::string, bool> schemas;
  std::vector<uint32_t> visible;
  for (const ProfileBuilder* part : parts) {
    const Meta& m = part->meta();
    if (part != parts[0]) add_counts(m, meta);
    const uint64_t shift = m.start_unix_ns > start ? m.start_unix_ns - start : 0;
    const PartCopier copy(*part, out, shift, categories, libs);
    meta.has_cpu_deltas = meta.has_cpu_deltas || m.has_cpu_deltas;
    meta.interval_ns = std::min(meta.interval_ns, m.interval_ns);
    meta.profiling_start_ns = std::min(meta.profiling_start_ns, copy.time(m.profiling_start_ns));
    if (m.profiling_end_ns) {
      meta.profiling_end_ns =
          std::max(meta.profiling_end_ns.value_or(0), copy.time(*m.profiling_end_ns));
    }
    const std::string process_name = process_track_name(m);
    std::vector<ThreadIndex> threads;
    for (const Thread& t : part->threads()) {
      threads.push_back(out.add_thread(copy.thread(t, process_name)));
    }
    if (m.initial_visible_threads) {
      for (uint32_t i : *m.initial_visible_threads) visible.push_back(raw(threads[i]));
    }
    for (const MarkerSchema& s : part->marker_schemas()) {
      if (schemas.emplace(s.name, true).second) out.add_marker_schema(s);
    }
    for (const Counter& c : part->counters()) {
      Counter moved = c;
      moved.main_thread = threads.empty() ? ThreadIndex{} : threads[raw(c.main_thread)];
      for (uint64_t& t : moved.time_ns) t = copy.time(t);
      out.add_counter(std::move(moved));
    }
    for (const ProfilerOverhead& o : part->overheads()) {
      ProfilerOverhead moved = o;
      moved.main_thread = threads.empty() ? ThreadIndex{} : threads[raw(o.main_thread)];
      for (uint64_t& t : moved.time_ns) t = copy.time(t);
      out.add_overhead(std::move(moved));
    }
  }
  if (!visible.empty()) meta.initial_visible_threads = visible;
  // The run opens on the thread that used the most CPU, in whichever process: a shell that ran
  // xz and gzip opens on xz, not on the shell waiting for them (the first process's choice).
  std::optional<uint32_t> busiest;
  uint64_t most_cpu = 0;
  const std::vector<Thread>& all = out.threads();
  for (uint32_t i = 0; i < all.size(); ++i) {
    if (!visible.empty() && std::find(visible.begin(), visible.end(), i) == visible.end()) continue;
    uint64_t cpu = 0;
    all[i].samples.for_each(
        [&](const SampleTable::Sample& x) { cpu += x.cpu_delta_ns.value_or(0); });
    if (!busiest || cpu > most_cpu) {
      busiest = i;
      most_cpu = cpu;
    }
  }
  if (busiest) meta.initial_selected_threads = std::vector<uint32_t>{*busiest};
}

}  // namespace inprof::symbolicate
