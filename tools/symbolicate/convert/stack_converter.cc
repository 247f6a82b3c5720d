#include "convert/stack_converter.h"

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

#include "convert/frame_address.h"
#include "convert/track_names.h"
#include "symbolize/cache/cached_symbolizer.h"
#include "symbolize/leaf_fixup.h"
#include "symbolize/module_map.h"
#include "symbolize/module_symbolizer.h"
#include "symbolize/parallel_symbolizer.h"
#include "symbolize/syscall_site.h"
#include "text_util.h"

namespace inprof::symbolicate {
namespace {

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

}  // namespace

StackConverter::StackConverter(const ProfileModel& model, ProfileBuilder& builder,
                               Diagnostics& diag, const ConvertOptions& options,
                               ConversionSummary& summary)
    : model_(model),
      b_(builder),
      diag_(diag),
      options_(options),
      summary_(summary),
      map_(model.modules()),
      locate_(options.locate) {
  modules_.resize(model.modules().size());
  stack_cache_.resize(model.stack_count());
  idle_stack_cache_.resize(model.stack_count());
  if (model.process()) {
    arch_ = model.process()->arch;
    locate_.arch = arch_;
    fix_leaves_ = arch_ == "x86_64" || arch_ == "aarch64";
    if (model.process()->os == "linux") syscall_size_ = syscall_instruction_size(arch_);
  }
}

CategoryIndex StackConverter::category(uint32_t dump_id) const {
  auto it = categories_.find(dump_id);
  return it == categories_.end() ? other_ : it->second;
}

std::optional<StackIndex> StackConverter::stack_for(RawStackId id, uint64_t time_ns, CpuUse use) {
  // The result changes only when modules are loaded or unloaded (a new epoch).
  StackCacheEntry& entry = stack_cache_[id];
  size_t epoch = map_.epoch(time_ns);
  if (entry.epoch != epoch) {
    entry.stack = build_stack(model_.stack(id), time_ns);
    entry.epoch = epoch;
  }
  if (use == CpuUse::kMostly || !entry.stack) return entry.stack;
  // Time run unseen is CPU, under its frame of its own; without CPU the thread is where it
  // sleeps, the stack below that frame.
  const bool unseen = model_.stack(id).flags & internal::kSampleRanUnseen;
  if (unseen && use != CpuUse::kNone) return entry.stack;
  const std::optional<StackIndex> stack =
      unseen ? b_.stacks().prefix[raw(*entry.stack)] : entry.stack;
  if (!stack) return stack;
  StackCacheEntry& idle_entry = idle_stack_cache_[id];
  if (idle_entry.epoch != epoch) {
    const RawStack& raw = model_.stack(id);
    // Copied asleep in a system call the OS named: blocked there, whatever the code around.
    idle_entry.in_syscall = raw.wait             ? std::optional<bool>(true)
                            : raw.frames.empty() ? std::nullopt
                                                 : in_syscall(raw.frames[0], time_ns);
    // The viewer counts a sample as idle when its stack's category is Idle, and a stack takes
    // the category of its top frame: an idle sample gets an Idle frame of its own on top (what
    // it waits on, where the sampler saw that), and every other frame keeps its category
    // whatever the sample.
    if (idle_entry.in_syscall == false) {
      idle_entry.stack = stack;
    } else {
      const FrameIndex top =
          raw.wait ? wait_frame(*raw.wait, time_ns) : idle_frame(idle_entry.in_syscall.has_value());
      idle_entry.stack = b_.handle_for_stack(stack, top);
    }
    idle_entry.epoch = epoch;
  }
  // Blocked: in a system call with little CPU time. Sampled elsewhere, it was runnable (waiting
  // for a CPU is not idle). Where the code cannot be read, only a thread that did not run at
  // all is taken as blocked.
  const bool idle = idle_entry.in_syscall ? *idle_entry.in_syscall : use == CpuUse::kNone;
  return idle ? idle_entry.stack : stack;
}

std::optional<bool> StackConverter::in_syscall(uint64_t address, uint64_t time_ns) {
  const size_t m = map_.find(address, time_ns);
  if (syscall_size_ == 0 || m == ModuleMap::kNone || address < syscall_size_) return std::nullopt;
  auto [it, inserted] = modules_[m].syscall_sites.try_emplace(address);
  if (inserted) {
    const uint64_t vaddr = address - syscall_size_ - model_.modules()[m].record.load_bias;
    ModuleState& state = modules_[m];
    if (auto known = state.cached.syscall_sites.find(vaddr);
        known != state.cached.syscall_sites.end()) {
      it->second = known->second;
    } else if (auto answer = files(m) ? syscall_site(m, vaddr) : std::nullopt) {
      it->second = *answer;
      if (!state.cache_key.empty()) {
        state.cached.learn_syscall_site(vaddr, it->second);
        state.cache_learnt = true;
      }
    }
  }
  return it->second;
}

std::optional<std::optional<bool>> StackConverter::syscall_site(size_t m, uint64_t vaddr) {
  uint8_t before[8];
  std::span<uint8_t> code(before, syscall_size_);
  auto answer = [&](bool read) {
    return std::optional<std::optional<bool>>(
        std::in_place,
        read ? std::optional<bool>(is_syscall_instruction(arch_, code)) : std::nullopt);
  };
  // The reader would read the same bytes of the same file.
  if (BinaryCode* binary = binary_code(m)) return answer(binary->read_code(vaddr, code));
  if (ModuleSymbolizer* sym = symbolizer(m)) return answer(sym->read_code(vaddr, code));
  return std::nullopt;
}

std::optional<std::optional<unsigned>> StackConverter::return_address_slot(size_t m,
                                                                           uint64_t vaddr) {
  const bool aarch64 = arch_ == "aarch64";
  if (BinaryCode* binary = binary_code(m)) {
    if (auto answer = binary->return_address_slot(vaddr, aarch64)) return answer;
  }
  if (ModuleSymbolizer* sym = symbolizer(m)) {
    return std::optional<std::optional<unsigned>>(std::in_place,
                                                  sym->return_address_slot(vaddr, aarch64));
  }
  return std::nullopt;
}

std::optional<StackIndex> StackConverter::build_stack(const RawStack& raw, uint64_t time_ns) {
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
        const uint64_t vaddr = leaf - model_.modules()[m].record.load_bias;
        if (auto known = state.cached.return_slots.find(vaddr);
            known != state.cached.return_slots.end()) {
          slot = known->second;
        } else if (auto answer = files(m) ? return_address_slot(m, vaddr) : std::nullopt) {
          slot = *answer;
          if (!state.cache_key.empty()) {
            state.cached.learn_return_slot(vaddr, slot);
            state.cache_learnt = true;
          }
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
    labels.push_back({position, &l});
  }
  auto push_labels_at = [&](size_t position, std::optional<StackIndex>& prefix) {
    for (const LabelView& l : labels) {
      if (l.position == position) {
        prefix = b_.handle_for_stack(prefix, label_frame(*l.label, prefix));
      }
    }
  };

  // A sample that is not complete says why, as its root: the walk stopped at the end of the
  // copy or at max_frames, the stack could not be copied at all (registers only), or the walk
  // stopped before the thread's outermost frame.
  std::optional<StackIndex> prefix;
  if (raw.flags & (internal::kSampleTruncatedCopy | internal::kSampleDepthLimit)) {
    prefix = b_.handle_for_stack(std::nullopt, mark_frame(kMarkTruncated));
  } else if (raw.flags & internal::kSampleNoStack) {
    prefix = b_.handle_for_stack(std::nullopt, mark_frame(kMarkNoStack));
  } else if (raw.flags & internal::kSampleIncomplete) {
    prefix = b_.handle_for_stack(std::nullopt, mark_frame(kMarkUnwindStopped));
  }
  // A label at position p sits between frames[p] (its caller) and frames[p - 1]; position ==
  // frame count puts it above the outermost frame.
  push_labels_at(addresses.size(), prefix);
  // The profiler's own code is never shown as the program's: the frame by which the program
  // entered it stays (malloc, a marker call), what it does inside is one frame of its own.
  ProfilerFrames profiler = ProfilerFrames::kOutside;
  for (size_t i = addresses.size(); i-- > 0;) {
    const FrameRun run = frames_for(addresses[i], i == 0, time_ns);
    const bool own = is_profiler_module(map_.find(code_address(addresses[i], i == 0), time_ns));
    for (uint32_t k = run.begin; k < run.end; ++k) {
      if (own && profiler == ProfilerFrames::kOutside) {
        profiler = ProfilerFrames::kEntered;
      } else if (own && profiler == ProfilerFrames::kEntered) {
        profiler = ProfilerFrames::kInside;
        prefix = b_.handle_for_stack(prefix, profiler_frame());
        continue;
      } else if (profiler == ProfilerFrames::kInside) {
        continue;  // its calls (into libc too) are its work
      } else if (!own) {
        profiler = ProfilerFrames::kOutside;  // the entry forwarding to the real allocator
      }
      prefix = b_.handle_for_stack(prefix, frame_pool_[k]);
    }
    push_labels_at(i, prefix);
  }
  // CPU the thread ran where no sample saw it, after which it slept here: a frame that says so
  // above the stack it went back to sleep in, which is not where that CPU went.
  if (raw.flags & internal::kSampleRanUnseen) prefix = b_.handle_for_stack(prefix, unseen_frame());
  return prefix;
}

const ModuleFiles* StackConverter::files(size_t m) {
  ModuleState& state = modules_[m];
  if (!state.located) {
    state.located = true;
    const internal::ModuleRecord& rec = model_.modules()[m].record;
    const auto& image = model_.modules()[m].image;
    state.files =
        locate_module_files(rec, locate_, &state.why,
                            image ? std::span<const uint8_t>(*image) : std::span<const uint8_t>());
    if (!state.files && !(rec.flags & internal::kModuleVdso)) {
      diag_.warn("module '" + rec.path + "': " + state.why + "; its frames stay unsymbolicated");
    }
  }
  return state.files ? &*state.files : nullptr;
}

ModuleSymbolizer* StackConverter::symbolizer(size_t m) {
  ModuleState& state = modules_[m];
  if (!state.opened) {
    state.opened = true;
    // A handle that symbolized ahead knows the module's units already.
    if (!state.batch.handles.empty()) {
      state.symbolizer = std::move(state.batch.handles.back());
      state.batch.handles.pop_back();
      return state.symbolizer.get();
    }
    if (files(m)) {
      ModuleFiles& f = *state.files;
      // Opened here only for what no cache answered (a leaf's CFI, a system-call site, an
      // address the leaf fix-up added): its DWARF inflated as the parallel handles get it, from
      // the cache's image if there is one, not by libdw's slower zlib.
#if !defined(_WIN32)
      if (!f.debug_image && f.image_cache.empty() && !state.cache_key.empty()) {
        f.image_cache = options_.cache->image_path(state.cache_key);
      }
#endif
      prepare_for_handles({&f}, effective_jobs(options_.jobs));
      ++summary_.modules_opened;
      state.symbolizer = ModuleSymbolizer::open(f, &state.why);
      if (state.symbolizer && state.index_read) {
        state.symbolizer->use_known_units(state.index.known_units());
        state.symbolizer->use_known_symbols(state.index.known_symbols());
      }
      if (!state.symbolizer) {
        diag_.warn("module '" + model_.modules()[m].record.path + "': " + state.why +
                   "; its frames stay unsymbolicated");
      }
    }
  }
  return state.symbolizer.get();
}

BinaryCode* StackConverter::binary_code(size_t m) {
  ModuleState& state = modules_[m];
  if (!state.code_opened) {
    state.code_opened = true;
    if (files(m)) state.code = BinaryCode::open(*state.files);
  }
  return state.code.get();
}

const AddressSymbol* StackConverter::symbol_for(size_t m, uint64_t vaddr) {
  static const AddressSymbol kNothing;
  ModuleState& state = modules_[m];
  const ModuleAddresses& batch = state.batch;
  auto it = std::lower_bound(batch.vaddrs.begin(), batch.vaddrs.end(), vaddr);
  if (it != batch.vaddrs.end() && *it == vaddr) {
    size_t i = static_cast<size_t>(it - batch.vaddrs.begin());
    if (batch.done[i]) return &batch.results[i];
  }
  // Not looked up ahead (a caller the leaf fix-up inserted): do it here.
  if (const AddressSymbol* known = state.cached.find_symbol(vaddr)) return known;
  if (!state.cache_key.empty()) {
    if (!state.index_read) {
      state.index = options_.cache->load_index(state.cache_key);
      state.index_read = true;
    }
    if (std::optional<AddressSymbol> answer = state.index.symbolize(vaddr)) {
      state.cache_learnt = true;
      return &state.cached.learn_symbol(vaddr, std::move(*answer));
    }
  }
  ModuleSymbolizer* sym = symbolizer(m);
  if (!sym) return &kNothing;
  if (state.cache_key.empty()) return &sym->lookup(vaddr);
  state.cache_learnt = true;
  return &state.cached.learn_symbol(vaddr, sym->symbolize(vaddr));
}

void StackConverter::symbolize_ahead() {
  // Every distinct address of every sampled stack and every allocation's stack, per module, at
  // each module epoch it was taken in; then all of them at once, on every core.
  std::unordered_set<uint64_t> seen;  // (epoch << 32) | stack
  std::vector<std::vector<uint64_t>> wanted(modules_.size());
  auto want = [&](RawStackId stack, uint64_t time_ns) {
    if (stack == kNoStack) return;
    size_t epoch = map_.epoch(time_ns);
    if (!seen.insert((uint64_t(epoch) << 32) | stack).second) return;
    const std::vector<uint64_t>& frames = model_.stack(stack).frames;
    for (size_t i = 0; i < frames.size(); ++i) {
      const uint64_t lookup = code_address(frames[i], i == 0);
      size_t m = map_.find(lookup, time_ns);
      if (m == ModuleMap::kNone) continue;
      wanted[m].push_back(lookup - model_.modules()[m].record.load_bias);
    }
  };
  for (const ThreadInfo& t : model_.threads()) {
    t.samples.for_each([&](const RawSample& s) { want(s.stack, s.time_ns); });
  }
  for (const RawAllocationEvent& e : model_.allocations()) {
    if (!e.is_free) want(e.stack, e.time_ns);
  }
  std::vector<ModuleAddresses> batches;
  std::vector<size_t> batch_module;
  std::vector<std::string> cache_keys;  // per batch
  for (size_t m = 0; m < modules_.size(); ++m) {
    if (wanted[m].empty()) continue;
    std::vector<uint64_t>& v = wanted[m];
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    modules_[m].addresses = v.size();
    summary_.unique_addresses += v.size();
    if (!files(m) || options_.no_symbols) continue;
    ModuleAddresses batch;
    batch.files = *modules_[m].files;
    batch.vaddrs = std::move(v);
    std::vector<uint64_t>().swap(wanted[m]);
    // The same build-id read from the same files symbolizes the same way.
    cache_keys.push_back(options_.cache
                             ? SymbolCache::key(model_.modules()[m].record.build_id, batch.files)
                             : std::string());
    batches.push_back(std::move(batch));
    batch_module.push_back(m);
  }
  auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();  // the process's CPU time, every thread's
  SymbolCacheUse use =
      symbolize_with_cache(batches, cache_keys, options_.cache.get(), options_.jobs,
                           options_.progress, options_.min_addresses_per_handle);
  summary_.cache_hits = use.hits;
  summary_.cache_indexed = use.indexed;
  summary_.modules_opened = use.opened;
  summary_.cache_misses = use.misses;
  summary_.symbolize_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  summary_.symbolize_cpu_seconds = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  summary_.threads = effective_jobs(options_.jobs);
  for (size_t i = 0; i < batches.size(); ++i) {
    ModuleState& state = modules_[batch_module[i]];
    state.files->debug_image = batches[i].files.debug_image;  // for this thread's own handle
    state.batch = std::move(batches[i]);
    state.cache_key = std::move(cache_keys[i]);
    state.cached = std::move(use.known[i]);
    state.cache_learnt = use.learnt[i];
    state.index = std::move(use.indexes[i]);
    state.index_read = use.index_read[i];
  }
}

void StackConverter::save_cache() {
  if (!options_.cache) return;
  bool wrote = false;
  for (ModuleState& state : modules_) {
    if (state.cache_key.empty()) continue;
    // What the handles read becomes the module index's: the next dump's new addresses in the
    // same units need no handle.
    std::vector<ModuleSymbolizer*> handles;
    if (state.symbolizer) handles.push_back(state.symbolizer.get());
    for (auto& h : state.batch.handles) handles.push_back(h.get());
    if (!handles.empty()) {
      if (!state.index_read) {
        state.index = options_.cache->load_index(state.cache_key);
        state.index_read = true;
      }
      for (ModuleSymbolizer* h : handles) h->export_index(state.index);
      std::string why;
      if (state.index.module_added() || !state.index.added_units().empty()) {
        wrote = true;
        if (!options_.cache->store_index(state.cache_key, state.index, &why)) {
          diag_.warn("symbol cache index not written: " + why);
        }
      }
      state.index = ModuleIndex();
    }
    if (!state.cache_learnt) continue;
    std::string why;
    wrote = true;
    if (!options_.cache->store(state.cache_key, state.cached, &why)) {
      diag_.warn("symbol cache not written: " + why);
    }
    state.cache_learnt = false;
  }
  if (wrote) options_.cache->evict();  // once, after every file of this run is in place
}

void StackConverter::report_modules() {
  for (size_t m = 0; m < modules_.size(); ++m) {
    const ModuleState& state = modules_[m];
    if (!state.located) continue;
    const internal::ModuleRecord& rec = model_.modules()[m].record;
    ++summary_.modules_used;
    ModuleReport r;
    r.path = rec.path;
    r.build_id = hex_string(rec.build_id);
    r.addresses = state.addresses;
    r.unnamed_frames = state.unnamed_frames;
    if (options_.no_symbols) {
      r.unnamed_why = "--no-symbols";
    } else if (!state.files || (state.opened && !state.symbolizer)) {
      r.unnamed_why = state.why;
    } else {
      r.unnamed_why = "no symbol or debug information covers the address";
    }
    // A file was read, yet not one of the module's addresses got a name (a binary stripped of
    // everything but its dynamic symbols): it is not counted as symbolicated.
    const bool named_none =
        !options_.no_symbols && state.addresses > 0 && state.unnamed_frames >= state.addresses;
    if (state.files && !(state.opened && !state.symbolizer) && named_none) {
      r.detail = state.files->origin +
                 ", yet no symbol covers any of its sampled addresses (a "
                 "stripped binary? give its debug file with --debug-dir)";
      r.unnamed_why = "no symbol covers the address";
      for (const std::string& why : state.files->rejected) r.detail += "; not used: " + why;
    } else if (state.files && !(state.opened && !state.symbolizer)) {
      ++summary_.modules_symbolicated;
      const ModuleFiles& f = *state.files;
      r.status = f.debug.empty() ? ModuleReport::kSymbolsOnly : ModuleReport::kDwarf;
      r.source = f.debug.empty() ? f.binary : f.debug;
      if (rec.flags & internal::kModuleVdso) r.source = "[vdso]";  // a temporary file, gone soon
      r.detail = f.origin;
      r.rejected = f.rejected;
    } else {
      r.detail = state.why;
    }
    summary_.modules.push_back(std::move(r));
  }
}

LibIndex StackConverter::lib(size_t m) {
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
    summary_.lib_modules.push_back(rec);  // add_lib appends: the index is the lib's
    summary_.lib_images.push_back(model_.modules()[m].image);
  }
  state.lib = it->second;
  return it->second;
}

}  // namespace inprof::symbolicate
