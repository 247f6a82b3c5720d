// Unwinds the stack copy with DWARF CFI, so that code built without frame pointers (most of
// libc, libstdc++, -O2 builds) still yields complete stacks. Rules come from a CfiProvider and are
// cached by address. Where an address has no CFI (JIT code), the walk continues by frame pointer,
// unless configured not to.
#ifndef INPROF_LIB_DWARF_UNWINDER_H_
#define INPROF_LIB_DWARF_UNWINDER_H_

#include <memory>

#include "dwarf/cfi_provider.h"
#include "dwarf/rule_cache.h"
#include "unwinder.h"

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

  std::unique_ptr<CfiProvider> cfi_;
  const bool frame_pointer_fallback_;
  RuleCache cache_;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_DWARF_UNWINDER_H_
