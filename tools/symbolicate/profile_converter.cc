#include "profile_converter.h"

#include <algorithm>
#include <cinttypes>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "leaf_fixup.h"
#include "module_map.h"
#include "module_symbolizer.h"

namespace inprof::symbolicate {
namespace {

std::string basename_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string hex_u64(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

class Converter {
 public:
  Converter(const ProfileModel& model, ProfileBuilder& builder, Diagnostics& diag)
      : model_(model), b_(builder), diag_(diag), map_(model.modules()) {
    modules_.resize(model.modules().size());
    stack_cache_.resize(model.stack_count());
    if (model.process()) {
      arch_ = model.process()->arch;
      fix_leaves_ = arch_ == "x86_64";
    }
  }

  ConversionSummary run();

 private:
  struct ModuleState {
    bool opened = false;
    std::unique_ptr<ModuleSymbolizer> symbolizer;
    std::optional<LibIndex> lib;
    std::unordered_map<uint64_t, std::optional<unsigned>> return_slots;  // by leaf address
  };
  struct StackCacheEntry {
    size_t epoch = SIZE_MAX;
    std::optional<StackIndex> stack;
  };
  struct AddressKey {
    size_t module;
    uint64_t address;
    bool leaf;
    bool operator<(const AddressKey& o) const {
      return std::tie(module, address, leaf) < std::tie(o.module, o.address, o.leaf);
    }
  };

  void add_meta();
  void add_threads();
  std::optional<StackIndex> stack_for(RawStackId id, uint64_t time_ns);
  std::optional<StackIndex> build_stack(const RawStack& raw, uint64_t time_ns);
  const std::vector<FrameIndex>& frames_for(uint64_t address, bool leaf, uint64_t time_ns);
  std::vector<FrameIndex> make_frames(size_t module, uint64_t address, bool leaf);
  ModuleSymbolizer* symbolizer(size_t module);
  LibIndex lib(size_t module);
  FrameIndex truncated_frame();

  const ProfileModel& model_;
  ProfileBuilder& b_;
  Diagnostics& diag_;
  ModuleMap map_;
  std::string arch_;
  bool fix_leaves_ = false;
  CategoryIndex other_{}, native_{};
  std::vector<ModuleState> modules_;
  std::map<std::tuple<std::string, std::string, uint64_t>, LibIndex> lib_by_file_;
  std::map<AddressKey, std::vector<FrameIndex>> address_frames_;
  std::vector<StackCacheEntry> stack_cache_;  // one slot per raw stack: memory stays bounded
  std::optional<FrameIndex> truncated_frame_;
  ConversionSummary summary_;
};

ConversionSummary Converter::run() {
  other_ = b_.add_category({"Other", "grey", {"Other"}});
  native_ = b_.add_category({"Native", "blue", {"Other"}});
  b_.add_category({"Idle", "transparent", {"Other"}});
  add_meta();
  add_threads();
  for (const ModuleState& m : modules_) {
    if (!m.opened) continue;
    ++summary_.modules_used;
    if (m.symbolizer) ++summary_.modules_symbolicated;
  }
  return summary_;
}

void Converter::add_meta() {
  Meta& meta = b_.meta();
  meta.has_cpu_deltas = model_.any_cpu_delta();
  if (const auto& p = model_.process()) {
    meta.start_unix_ns = p->start_unix_ns;
    if (p->interval_ns) meta.interval_ns = p->interval_ns;
    meta.product = basename_of(p->executable);
    for (size_t i = 0; i < p->command_line.size(); ++i) {
      if (i) meta.arguments += ' ';
      meta.arguments += p->command_line[i];
    }
    meta.oscpu = p->arch;
    meta.platform = p->os == "linux" ? "Linux" : p->os;
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
    meta.extra.push_back({"Sampler ticks late", s->ticks_late});
  }
  meta.extra.push_back({"Samples in this profile", uint64_t(model_.sample_count())});
  meta.extra.push_back({"Dump complete", model_.end_ns().has_value()});
}

void Converter::add_threads() {
  std::vector<const ThreadInfo*> order;
  for (const ThreadInfo& t : model_.threads()) order.push_back(&t);
  // The main thread first: the viewer shows threads in this order.
  std::stable_partition(order.begin(), order.end(), [](const ThreadInfo* t) { return t->is_main; });

  uint64_t pid = model_.process() ? model_.process()->pid : 0;
  for (const ThreadInfo* info : order) {
    Thread t;
    t.name = info->name.empty() ? "Thread " + std::to_string(info->tid) : info->name;
    t.is_main = info->is_main;
    t.process_name = b_.meta().product;
    t.pid = pid;
    t.tid = info->tid;
    t.unregister_ns = info->end_ns;

    std::vector<RawSample> samples = info->samples;
    std::stable_sort(samples.begin(), samples.end(),
                     [](const RawSample& a, const RawSample& b) { return a.time_ns < b.time_ns; });
    if (info->start_ns) {
      t.register_ns = *info->start_ns;
    } else if (!samples.empty()) {
      t.register_ns = samples.front().time_ns;
    }
    SampleTable& st = t.samples;
    st.stack.reserve(samples.size());
    st.time_ns.reserve(samples.size());
    st.cpu_delta_ns.reserve(samples.size());
    for (const RawSample& s : samples) {
      st.stack.push_back(s.stack == kNoStack ? std::nullopt : stack_for(s.stack, s.time_ns));
      st.time_ns.push_back(s.time_ns);
      st.cpu_delta_ns.push_back(s.cpu_delta_ns);
    }
    b_.add_thread(std::move(t));
  }
}

std::optional<StackIndex> Converter::stack_for(RawStackId id, uint64_t time_ns) {
  // The result changes only when modules are loaded or unloaded (a new epoch).
  StackCacheEntry& entry = stack_cache_[id];
  size_t epoch = map_.epoch(time_ns);
  if (entry.epoch != epoch) {
    entry.stack = build_stack(model_.stack(id), time_ns);
    entry.epoch = epoch;
  }
  return entry.stack;
}

std::optional<StackIndex> Converter::build_stack(const RawStack& raw, uint64_t time_ns) {
  std::vector<uint64_t> addresses = raw.frames;
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
          slot = sym->x86_64_return_address_slot(leaf - model_.modules()[m].record.load_bias);
        }
        it = state.return_slots.emplace(leaf, slot).first;
      }
      if (auto caller = missing_leaf_caller(addresses, raw.leaf_candidates, it->second)) {
        addresses.insert(addresses.begin() + 1, *caller);
        ++summary_.leaf_callers_inserted;
      }
    }
  }

  std::optional<StackIndex> prefix;
  if (raw.flags & (internal::kSampleTruncatedCopy | internal::kSampleDepthLimit)) {
    prefix = b_.handle_for_stack(std::nullopt, truncated_frame());
  }
  for (size_t i = addresses.size(); i-- > 0;) {
    for (FrameIndex f : frames_for(addresses[i], i == 0, time_ns)) {
      prefix = b_.handle_for_stack(prefix, f);
    }
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

const std::vector<FrameIndex>& Converter::frames_for(uint64_t address, bool leaf,
                                                     uint64_t time_ns) {
  size_t m = map_.find(address, time_ns);
  AddressKey key{m, address, leaf};
  auto it = address_frames_.find(key);
  if (it != address_frames_.end()) return it->second;
  return address_frames_.emplace(key, make_frames(m, address, leaf)).first->second;
}

std::vector<FrameIndex> Converter::make_frames(size_t m, uint64_t address, bool leaf) {
  if (m == ModuleMap::kNone) {
    FuncIndex func = b_.handle_for_func(b_.handle_for_string(hex_u64(address)), std::nullopt,
                                        std::nullopt, std::nullopt);
    return {b_.handle_for_frame(func, std::nullopt, 0, native_, 0, std::nullopt, std::nullopt)};
  }
  const internal::ModuleRecord& rec = model_.modules()[m].record;
  LibIndex lib_index = lib(m);
  ResourceIndex resource = b_.resource_for_lib(lib_index);
  uint64_t relative = address - rec.start;

  std::vector<FrameIndex> frames;
  if (ModuleSymbolizer* sym = symbolizer(m)) {
    // A return address points after the call: look up the call instruction itself.
    uint64_t lookup = leaf || address == 0 ? address : address - 1;
    const AddressSymbol& info = sym->lookup(lookup - rec.load_bias);
    if (!info.frames.empty()) {
      std::optional<NativeSymbolIndex> native;
      if (info.symbol) {
        uint64_t start = info.symbol->vaddr + rec.load_bias;
        if (start >= rec.start && start < rec.end) {
          native = b_.handle_for_native_symbol(lib_index, start - rec.start,
                                               b_.handle_for_string(info.symbol->name),
                                               info.symbol->size);
        }
      }
      for (size_t depth = 0; depth < info.frames.size(); ++depth) {
        const SourceFrame& f = info.frames[depth];
        std::optional<SourceIndex> source;
        if (!f.file.empty()) source = b_.handle_for_source(f.file);
        FuncIndex func = b_.handle_for_func(
            b_.handle_for_string(f.function), resource, source,
            f.decl_line ? std::optional<uint32_t>(f.decl_line) : std::nullopt);
        frames.push_back(b_.handle_for_frame(
            func, relative, static_cast<uint32_t>(depth), native_, 0, native,
            f.line ? std::optional<uint32_t>(f.line) : std::nullopt));
      }
      return frames;
    }
  }
  std::string name = basename_of(rec.path) + "+" + hex_u64(relative);
  FuncIndex func =
      b_.handle_for_func(b_.handle_for_string(name), resource, std::nullopt, std::nullopt);
  frames.push_back(
      b_.handle_for_frame(func, relative, 0, native_, 0, std::nullopt, std::nullopt));
  return frames;
}

ModuleSymbolizer* Converter::symbolizer(size_t m) {
  ModuleState& state = modules_[m];
  if (!state.opened) {
    state.opened = true;
    const internal::ModuleRecord& rec = model_.modules()[m].record;
    std::string why;
    state.symbolizer = ModuleSymbolizer::open(rec, &why);
    if (!state.symbolizer && !(rec.flags & internal::kModuleVdso)) {
      diag_.warn("module '" + rec.path + "': " + why + "; its frames stay unsymbolicated");
    }
  }
  return state.symbolizer.get();
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
    lib.name = basename_of(rec.path);
    lib.path = rec.path;
    lib.debug_name = lib.name;
    lib.debug_path = rec.path;
    lib.breakpad_id = breakpad_id(rec.build_id);
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
                                  Diagnostics& diag) {
  return Converter(model, builder, diag).run();
}

}  // namespace inprof::symbolicate
