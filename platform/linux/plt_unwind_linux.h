// Unwind rules for PLT stubs where the linker emits no CFI for them.
//
// x86-64: ld describes .plt in .eh_frame: nothing here. aarch64: ld emits none, yet every call
// into a shared library passes through a stub (and qemu-user, delivering signals at block
// boundaries, samples the stub's first instruction often). The stubs are fixed sequences:
//   PLT0 (32 bytes, lazy binding only): stp x16, x30, [sp, #-16]!; adrp; ldr; add; br x17; nops
//   PLTn (16 bytes): adrp x16; ldr x17; add x16; br x17 — SP, FP and LR untouched.
#ifndef INPROF_PLATFORM_LINUX_PLT_UNWIND_LINUX_H_
#define INPROF_PLATFORM_LINUX_PLT_UNWIND_LINUX_H_

#include <cstdint>
#include <optional>

#include "dwarf/unwind_rule.h"

namespace inprof::internal {

// The rule at `offset` bytes into a module's .plt section, if the architecture needs one.
inline std::optional<UnwindRule> plt_rule(uint64_t offset) {
#if defined(__aarch64__)
  UnwindRule rule;
  rule.kind = RuleKind::kSimple;
  rule.cfa_register = kRegSp;
  if (offset >= 4 && offset < 32) {  // PLT0 after its stp: x30 at [SP + 8]
    rule.cfa_offset = 16;
    rule.ra_offset = -8;
  } else {  // PLT0's first instruction, and every PLTn: the return address is still in LR
    rule.ra_in_lr = true;
  }
  return rule;
#else
  (void)offset;
  return std::nullopt;
#endif
}

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_PLT_UNWIND_LINUX_H_
