// Turns the model's raw stacks into the profile's stack, frame, func and lib tables: maps each
// address to its module, symbolizes it (ahead of time, in parallel, and on demand), applies the
// leaf fix-up, names JIT code, and marks samples idle or in a system call. Used by
// convert_profile (profile_converter.cc), which turns the rest of the model into tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "convert/profile_builder.h"
#include "convert/profile_converter.h"
#include "read/flat_index_set.h"
#include "read/profile_model.h"
#include "symbolize/binary_code.h"
#include "symbolize/cache/symbol_cache_file.h"
#include "symbolize/debug_file_locator.h"
#include "symbolize/elf/data_symbols.h"
#include "symbolize/module_map.h"
#include "symbolize/module_symbolizer.h"
#include "symbolize/parallel_symbolizer.h"

namespace inprof::symbolicate {

class StackConverter {
 public:
  // The root of a sample that is not complete, saying why (issue 21).
  enum Mark { kMarkTruncated, kMarkNoStack, kMarkUnwindStopped, kMarks };
  // The mark a sample with these dump flags gets, or kMarks for none.
  static Mark mark_for(uint32_t flags) {
    if (flags & (internal::kSampleTruncatedCopy | internal::kSampleDepthLimit)) {
      return kMarkTruncated;
    }
    if (flags & internal::kSampleNoStack) return kMarkNoStack;
    if (flags & internal::kSampleIncomplete) return kMarkUnwindStopped;
    return kMarks;
  }
  // Adds what it learns (symbolization times, modules, JIT frames, ...) to `summary`.
  StackConverter(const ProfileModel& model, ProfileBuilder& builder, Diagnostics& diag,
                 const ConvertOptions& options, ConversionSummary& summary);

  // The categories its frames are put in, and the dump's own (by dump category id); set before
  // the first stack_for.
  void set_categories(CategoryIndex other, CategoryIndex native, CategoryIndex idle,
                      std::optional<CategoryIndex> jit,
                      std::map<uint32_t, CategoryIndex> by_dump_id) {
    other_ = other;
    native_ = native;
    idle_ = idle;
    jit_ = jit;
    categories_ = std::move(by_dump_id);
  }
  // The profile's category for a dump category id (Other if the dump did not define it).
  CategoryIndex category(uint32_t dump_id) const;
  const ModuleMap& module_map() const { return map_; }
  // Symbolizes every sampled address in parallel, before the stacks are built.
  void symbolize_ahead();
  std::optional<StackIndex> stack_for(RawStackId id, uint64_t time_ns, CpuUse use);
  // Fills summary.modules and warns about modules left unsymbolicated.
  void report_modules();
  // Writes what this conversion learnt about each cached module to the symbol cache.
  void save_cache();

 private:
  struct LabelView {  // a label ready to be placed: its slot in the stack
    uint32_t position;
    const internal::SampleLabel* label;
  };
  struct ModuleState {
    bool located = false;
    std::optional<ModuleFiles> files;
    std::string why;  // when no files
    bool opened = false;
    std::unique_ptr<ModuleSymbolizer> symbolizer;  // this thread's, for CFI and stragglers
    // The binary's own answers to the leaf questions (binary_code.h): asked before the reader,
    // which they spare opening.
    bool code_opened = false;
    std::unique_ptr<BinaryCode> code;
    ModuleAddresses batch;  // symbolized ahead, in parallel
    size_t addresses = 0;
    size_t unnamed_frames = 0;     // distinct frame addresses left as module+0x...
    FlatKeyMap unnamed_funcs;      // by the runtime start of their .eh_frame range
    std::optional<bool> profiler;  // one of inprof's own libraries
    std::optional<LibIndex> lib;
    std::unordered_map<uint64_t, std::optional<unsigned>> return_slots;  // by leaf address
    std::unordered_map<uint64_t, std::optional<bool>> syscall_sites;     // by leaf address
    std::optional<DataSymbols> data_symbols;  // read when a wait's futex first lies in it
    // The persistent symbol cache's file for the module (empty key: not cached), with what this
    // run learnt added; written back at the end if it did learn something.
    std::string cache_key;
    CachedModule cached;
    bool cache_learnt = false;
    // Its module index (module_index.h): read when an address first needs it; what this run's
    // handles read is added to it at the end.
    ModuleIndex index;
    bool index_read = false;
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

  // Whether a sample whose leaf is `address` was in a system call; nothing if the code there
  // cannot be read.
  std::optional<bool> in_syscall(uint64_t address, uint64_t time_ns);
  FrameIndex idle_frame(bool blocked);
  FrameIndex wait_frame(const internal::SampleWait& wait, uint64_t time_ns);
  // The global or static variable holding `address` ("g_mutex", "pool+0x28"), if a module's
  // symbol table names one.
  std::optional<std::string> data_object_name(uint64_t address, uint64_t time_ns);
  // The heap block holding `address` at `time_ns`, named by the function that allocated it,
  // when allocation sampling recorded that block (heap_blocks.cc).
  std::optional<std::string> heap_block_name(uint64_t address, uint64_t time_ns);
  std::optional<StackIndex> build_stack(const RawStack& raw, uint64_t time_ns);
  // `caller`: the stack the label sits on, whose category a label without one takes.
  FrameIndex label_frame(const internal::SampleLabel& label, std::optional<StackIndex> caller);
  FrameRun frames_for(uint64_t address, bool leaf, uint64_t time_ns);
  // Appends the frames of `address` in `module` (ModuleMap::kNone: in none) to frame_pool_.
  void make_frames(size_t module, uint64_t address, bool leaf);
  ModuleSymbolizer* symbolizer(size_t module);
  BinaryCode* binary_code(size_t module);
  // The function of an address no symbol covers: one per .eh_frame range, else the address's.
  FuncIndex unnamed_func(size_t module, uint64_t address, uint64_t lookup);
  // The leaf questions (ModuleSymbolizer::return_address_slot, and whether the code before the
  // address is a system call), asked of the binary first, else of the module's reader; nullopt
  // when neither is at hand (the answer is then not cached).
  std::optional<std::optional<unsigned>> return_address_slot(size_t module, uint64_t vaddr);
  std::optional<std::optional<bool>> syscall_site(size_t module, uint64_t vaddr);
  const ModuleFiles* files(size_t module);
  const AddressSymbol* symbol_for(size_t module, uint64_t vaddr);
  LibIndex lib(size_t module);
  FrameIndex mark_frame(Mark mark);
  FrameIndex unseen_frame();
  // "[inprof's own work]": what the profiler's code did where a program's call entered it.
  FrameIndex profiler_frame();
  bool is_profiler_module(size_t module);
  enum class ProfilerFrames { kOutside, kEntered, kInside };

  const ProfileModel& model_;
  ProfileBuilder& b_;
  Diagnostics& diag_;
  const ConvertOptions& options_;
  ConversionSummary& summary_;
  ModuleMap map_;
  std::string arch_;
  LocateOptions locate_;  // options_.locate with the dump's architecture
  bool fix_leaves_ = false;
  CategoryIndex other_{}, native_{}, idle_{};
  std::optional<CategoryIndex> jit_;              // only when the dump has a JIT map
  std::map<uint32_t, CategoryIndex> categories_;  // by dump category id
  std::vector<ModuleState> modules_;
  std::map<std::tuple<std::string, std::string, uint64_t>, LibIndex> lib_by_file_;
  std::vector<FrameIndex> frame_pool_;             // the frames of every address, in runs
  std::vector<FrameRun> frame_runs_;               // by the values of ModuleState::frame_runs
  FlatKeyMap unmapped_frame_runs_[2];              // the same for addresses in no module
  std::vector<StackCacheEntry> stack_cache_;       // one slot per raw stack: memory stays bounded
  std::vector<StackCacheEntry> idle_stack_cache_;  // the same stacks with an idle frame on top
  size_t syscall_size_ = 0;                        // 0: leaves are not checked for system calls
  std::optional<FrameIndex> idle_frames_[2];       // by idle_frame's `blocked`
  std::map<std::tuple<uint32_t, uint64_t, uint8_t>, FrameIndex> wait_frames_;  // call, object, kind
  std::optional<FrameIndex> mark_frames_[kMarks];
  std::optional<FrameIndex> unseen_frame_;  // "[ran between samples]"
  std::optional<FrameIndex> profiler_frame_;
  struct HeapBlock {  // a recorded allocation and its lifetime
    uint64_t address = 0, size = 0, from_ns = 0, to_ns = kNever;
    RawStackId stack = kNoStack;
  };
  std::optional<std::vector<HeapBlock>> heap_blocks_;  // by address; built when first asked
  uint64_t largest_heap_block_ = 0;
};

}  // namespace inprof::symbolicate
