// Unwinds the stack copy with DWARF CFI, so that code built without frame pointers (most of
// libc, libstdc++, -O2 builds) still yields complete stacks. Rules come from a CfiProvider and are
// cached by address. Where an address has no CFI (JIT code), the walk continues by frame pointer,
// unless configured not to.
//
// A snapshot with only SP and PC (StackSnapshot::registers_partial) lacks the frame pointer that
// frame-pointer code's CFI needs: the first frame that needs it gets it from the stack itself,
// the lowest word pair above SP that is a frame record (a saved frame pointer, then an address
// that follows a call instruction) from which the rest of the walk reaches the thread's
// outermost frame. No such record: the walk ends there, marked incomplete.
#ifndef INPROF_LIB_DWARF_UNWINDER_H_
#define INPROF_LIB_DWARF_UNWINDER_H_

#include <memory>

#include "unwind/dwarf/cfi_provider.h"
#include "unwind/dwarf/rule_cache.h"
#include "unwind/unwinder.h"

namespace inprof::internal {

class DwarfUnwinder final : public Unwinder {
 public:
  // `frame_pointer_fallback`: continue by frame pointer where no CFI covers an address.
  DwarfUnwinder(std::unique_ptr<CfiProvider> cfi, bool frame_pointer_fallback);

  UnwindOutput unwind(const StackSnapshot& snapshot, std::span<uint64_t> frames,
                      std::span<uint64_t> stack_pointers = {}) override;
  void set_modules(const std::vector<ModuleInfo>& modules) override;

  const RuleCache& cache() const { return cache_; }

 private:
  const UnwindRule& rule_for(uint64_t pc);
  // The walk from `regs` on, appending to `out`. `fp_known`: regs[kRegFp] is the thread's.
  UnwindOutput walk(const StackSnapshot& snapshot, const uint64_t* regs, bool exact_pc,
                    bool fp_known, bool lr_known, std::span<uint64_t> frames,
                    std::span<uint64_t> stack_pointers, UnwindOutput out);
  // Finds the frame record of a frame-pointer frame whose frame pointer is unknown (see above).
  UnwindOutput recover_frame_pointer(const StackSnapshot& snapshot, const uint64_t* regs,
                                     bool exact_pc, std::span<uint64_t> frames,
                                     std::span<uint64_t> stack_pointers, const UnwindOutput& out);
  // An address a call left behind: covered by CFI, and the code before it ends with a call.
  bool is_return_address(uint64_t address);

  std::unique_ptr<CfiProvider> cfi_;
  const bool frame_pointer_fallback_;
  RuleCache cache_;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_DWARF_UNWINDER_H_
