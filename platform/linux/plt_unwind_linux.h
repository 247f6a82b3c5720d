// Unwind rules for PLT stubs where the linker emits no CFI for them.
//
// x86-64: ld describes .plt in .eh_frame: nothing here. aarch64: ld emits none, yet every call
// into a shared library passes through a stub (and qemu-user, delivering signals at block
// boundaries, samples the stub's first instruction often). The stubs are fixed sequences:
//   PLT0 (32 bytes, lazy binding only): stp x16, x30, [sp, #-16]!; adrp; ldr; add; br x17; nops
//   PLTn (16 bytes): adrp x16; ldr x17; add x16; br x17 — SP, FP and LR untouched.
// Without section headers (the module's file is never opened) .plt has no known bounds: a stub
// is recognised by its instructions, read from the module's mapping.
#ifndef INPROF_PLATFORM_LINUX_PLT_UNWIND_LINUX_H_
#define INPROF_PLATFORM_LINUX_PLT_UNWIND_LINUX_H_

#include <cstdint>
#include <optional>

#include "unwind/dwarf/memory_view.h"
#include "unwind/dwarf/unwind_rule.h"

namespace inprof::internal {

enum class PltPosition {
  kNone,          // not in a stub
  kLinkRegister,  // the return address is still in LR, SP unchanged
  kPushed,        // in PLT0 after its stp: x30 at [SP + 8], CFA = SP + 16
};

// Where `pc` is in an aarch64 PLT stub, from the instruction words around it (any host: the
// words are data here).
inline PltPosition aarch64_plt_position(const MemoryView& code, uint64_t pc) {
  auto word = [&](uint64_t address, uint32_t* w) { return code.read(address, w, sizeof(*w)); };
  auto stub_at = [&](uint64_t start) {  // adrp x16; ldr x17, [x16, #]; add x16, x16, #; br x17
    uint32_t w[4];
    for (int i = 0; i < 4; ++i) {
      if (!word(start + 4 * i, &w[i])) return false;
    }
    return (w[0] & 0x9f00001fu) == 0x90000010u && (w[1] & 0xffc003ffu) == 0xf9400211u &&
           (w[2] & 0xffc003ffu) == 0x91000210u && w[3] == 0xd61f0220u;
  };
  constexpr uint32_t kPushX16X30 = 0xa9bf7bf0u;  // stp x16, x30, [sp, #-16]!
  const uint64_t at = pc & ~uint64_t{3};
  uint32_t w;
  if (word(at, &w) && w == kPushX16X30 && stub_at(at + 4)) return PltPosition::kLinkRegister;
  for (uint64_t k = 0; k < 4 && at >= 4 * k; ++k) {
    const uint64_t start = at - 4 * k;
    if (!stub_at(start)) continue;
    const bool pushed = start >= 4 && word(start - 4, &w) && w == kPushX16X30;
    return pushed ? PltPosition::kPushed : PltPosition::kLinkRegister;
  }
  return PltPosition::kNone;
}

// The rule for a PLT stub at `pc`, if the architecture needs one and `pc` is in one.
inline std::optional<UnwindRule> plt_rule(const MemoryView& code, uint64_t pc) {
#if defined(__aarch64__)
  const PltPosition position = aarch64_plt_position(code, pc);
  if (position == PltPosition::kNone) return std::nullopt;
  UnwindRule rule;
  rule.kind = RuleKind::kSimple;
  rule.cfa_register = kRegSp;
  if (position == PltPosition::kPushed) {
    rule.cfa_offset = 16;
    rule.ra_offset = -8;
  } else {
    rule.ra_in_lr = true;
  }
  return rule;
#else
  (void)code;
  (void)pc;
  return std::nullopt;
#endif
}

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_PLT_UNWIND_LINUX_H_
