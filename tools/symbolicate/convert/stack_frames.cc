// The frames a stack is made of (the other half of StackConverter, stack_converter.h): a module
// address's (its inline chain, or one unnamed function per .eh_frame entry), labels, the marks of
// an incomplete walk, idle, CPU run unseen, and the profiler's own work.
#include <string>

#include "convert/frame_address.h"
#include "convert/stack_converter.h"
#include "convert/wait_reasons.h"
#include "symbolize/module_map.h"
#include "symbolize/module_symbolizer.h"
#include "text_util.h"

namespace inprof::symbolicate {

FrameIndex StackConverter::idle_frame(bool blocked) {
  std::optional<FrameIndex>& frame = idle_frames_[blocked];
  if (!frame) {
    FuncIndex func =
        b_.handle_for_func(b_.handle_for_string(blocked ? "[blocked]" : "[not running]"),
                           std::nullopt, std::nullopt, std::nullopt);
    frame = b_.handle_for_frame(func, std::nullopt, 0, idle_, 0, std::nullopt, std::nullopt);
  }
  return *frame;
}

FrameIndex StackConverter::wait_frame(const internal::SampleWait& wait, uint64_t time_ns) {
  auto [it, inserted] = wait_frames_.try_emplace({wait.call, wait.object, wait.object_kind});
  if (inserted) {
    const std::optional<WaitReason> reason = wait_reason(arch_, wait.call);
    std::optional<std::string> object;
    if (reason && reason->object == WaitObject::kFutex) {
      object = data_object_name(wait.object, time_ns);
      if (!object) object = heap_block_name(wait.object, time_ns);
    }
    FuncIndex func =
        b_.handle_for_func(b_.handle_for_string(wait_frame_name(arch_, wait.call, wait.object,
                                                                wait.object_kind, object)),
                           std::nullopt, std::nullopt, std::nullopt);
    it->second = b_.handle_for_frame(func, std::nullopt, 0, idle_, 0, std::nullopt, std::nullopt);
  }
  return it->second;
}

std::optional<std::string> StackConverter::data_object_name(uint64_t address, uint64_t time_ns) {
  const size_t m = map_.find(address, time_ns);
  if (m == ModuleMap::kNone) return std::nullopt;  // the heap, a stack, an anonymous mapping
  ModuleState& state = modules_[m];
  if (!state.data_symbols) {
    const ModuleFiles* f = files(m);
    state.data_symbols = f && !f->macho ? DataSymbols::load({f->binary, f->debug}) : DataSymbols{};
  }
  const auto found = state.data_symbols->find(address - model_.modules()[m].record.load_bias);
  if (!found) return std::nullopt;
  if (found->offset == 0) return found->name;
  return found->name + "+" + hex_u64(found->offset);
}

FrameIndex StackConverter::label_frame(const internal::SampleLabel& label,
                                       std::optional<StackIndex> caller) {
  const std::string* text = model_.string(label.string_id);
  std::string name = text ? *text : "[label " + std::to_string(label.string_id) + "]";
  FuncIndex func =
      b_.handle_for_func(b_.handle_for_string(name), std::nullopt, std::nullopt, std::nullopt);
  // A label given no category is part of the code that set it: its caller's category (a grey
  // "Other" label inside blue stacks read as something else).
  CategoryIndex in = category(label.category);
  if (label.category == 0 && caller) {
    in = b_.frames().category[raw(b_.stacks().frame[raw(*caller)])];
  }
  return b_.handle_for_frame(func, std::nullopt, 0, in, 0, std::nullopt, std::nullopt);
}

bool StackConverter::is_profiler_module(size_t m) {
  if (m == ModuleMap::kNone) return false;
  ModuleState& state = modules_[m];
  if (!state.profiler) {
    // libinprof.so and libinprof_allocations.so (the C++ API's name, the interposer's).
    const std::string& path = model_.modules()[m].record.path;
    const std::string name = path.substr(path.rfind('/') + 1);
    state.profiler =
        name.rfind("libinprof.so", 0) == 0 || name.rfind("libinprof_allocations.so", 0) == 0;
  }
  return *state.profiler;
}

FrameIndex StackConverter::profiler_frame() {
  if (!profiler_frame_) {
    FuncIndex func = b_.handle_for_func(b_.handle_for_string("[inprof's own work]"), std::nullopt,
                                        std::nullopt, std::nullopt);
    profiler_frame_ =
        b_.handle_for_frame(func, std::nullopt, 0, other_, 0, std::nullopt, std::nullopt);
  }
  return *profiler_frame_;
}

FrameIndex StackConverter::unseen_frame() {
  if (!unseen_frame_) {
    FuncIndex func = b_.handle_for_func(b_.handle_for_string("[ran between samples]"), std::nullopt,
                                        std::nullopt, std::nullopt);
    unseen_frame_ =
        b_.handle_for_frame(func, std::nullopt, 0, other_, 0, std::nullopt, std::nullopt);
  }
  return *unseen_frame_;
}

FrameIndex StackConverter::mark_frame(Mark mark) {
  static constexpr const char* kNames[] = {"[truncated stack]", "[no stack]", "[unwind stopped]"};
  std::optional<FrameIndex>& frame = mark_frames_[mark];
  if (!frame) {
    FuncIndex func = b_.handle_for_func(b_.handle_for_string(kNames[mark]), std::nullopt,
                                        std::nullopt, std::nullopt);
    frame = b_.handle_for_frame(func, std::nullopt, 0, other_, 0, std::nullopt, std::nullopt);
  }
  return *frame;
}

StackConverter::FrameRun StackConverter::frames_for(uint64_t address, bool leaf, uint64_t time_ns) {
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

void StackConverter::make_frames(size_t m, uint64_t address, bool leaf) {
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
    ++summary_.unmapped_frames;
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

  if (!options_.no_symbols && files(m)) {
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
  ++modules_[m].unnamed_frames;
  frame_pool_.push_back(b_.handle_for_frame(unnamed_func(m, address, lookup), relative, 0, native_,
                                            0, std::nullopt, std::nullopt));
}

FuncIndex StackConverter::unnamed_func(size_t m, uint64_t address, uint64_t lookup) {
  const internal::ModuleRecord& rec = model_.modules()[m].record;
  const LibIndex lib_index = lib(m);
  const ResourceIndex resource = b_.resource_for_lib(lib_index);
  const std::string& module = b_.libs()[raw(lib_index)].name;
  // Without a symbol, the binary's .eh_frame still says where the function holding the address
  // begins and ends: every address of it is one function, named by its start in a form that says
  // it has no name (a stripped library's hot loop was dozens of one-address rows).
  BinaryCode* binary = options_.no_symbols ? nullptr : binary_code(m);
  if (auto range = binary ? binary->function_range(lookup - rec.load_bias) : std::nullopt) {
    const uint64_t start = range->first + rec.load_bias;
    if (start >= rec.start && start < rec.end) {
      return static_cast<FuncIndex>(modules_[m].unnamed_funcs.get_or_make(start, [&] {
        const std::string name = "unnamed function at " + module + "+" + hex_u64(start - rec.start);
        return raw(
            b_.handle_for_func(b_.handle_for_string(name), resource, std::nullopt, std::nullopt));
      }));
    }
  }
  // Named by the address the dump holds, as other tools print a return address.
  const std::string name = module + "+" + hex_u64(address - rec.start);
  return b_.handle_for_func(b_.handle_for_string(name), resource, std::nullopt, std::nullopt);
}

}  // namespace inprof::symbolicate
