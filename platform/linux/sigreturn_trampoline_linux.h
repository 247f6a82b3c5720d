// The unwind rule for a signal handler's return trampoline where its CFI cannot be used.
//
// x86-64: glibc's __restore_rt carries complete CFI (expressions into the ucontext): nothing here.
// aarch64: the kernel's vDSO __kernel_rt_sigreturn describes only the frame record {x29, x30}
// (no SP, no PC), and qemu-user's trampoline has no CFI at all. Both are the two instructions
// `mov x8, #__NR_rt_sigreturn; svc #0` with SP at the rt_sigframe {siginfo_t, ucontext_t}; the
// rule reads every register of the interrupted context from that ucontext, as unwinders of the
// platform (libgcc, libunwind) do.
#ifndef INPROF_PLATFORM_LINUX_SIGRETURN_TRAMPOLINE_LINUX_H_
#define INPROF_PLATFORM_LINUX_SIGRETURN_TRAMPOLINE_LINUX_H_

#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include <cstddef>
#include <cstdint>

#include "session/process_info.h"
#include "unwind/dwarf/dwarf_constants.h"
#include "unwind/dwarf/unwind_rule.h"

namespace inprof::internal {

#if defined(__aarch64__)

// Whether `pc` is at a `mov x8, #139; svc #0` (rt_sigreturn) pair. Unwinders look up a return
// address minus 1 (the call); the handler "returns" to the trampoline's first instruction, so the
// address is rounded up to an instruction. The code is read without trusting it to be mapped.
inline bool is_sigreturn_trampoline(uint64_t pc) {
  uint32_t code[2];
  const uint64_t instruction = (pc + 3) & ~uint64_t{3};
  if (read_memory(instruction, code, sizeof(code)) != sizeof(code)) return false;
  static_assert(SYS_rt_sigreturn == 139);
  return code[0] == 0xd2801168 && code[1] == 0xd4000001;
}

// At the trampoline SP points at the rt_sigframe: siginfo_t, then the ucontext_t.
inline ExpressionRule sigreturn_trampoline_rule() {
  constexpr uint64_t kContext = sizeof(siginfo_t) + offsetof(ucontext_t, uc_mcontext);
  constexpr uint64_t kRegs = kContext + offsetof(mcontext_t, regs);
  constexpr uint64_t kSp = kContext + offsetof(mcontext_t, sp);
  constexpr uint64_t kPc = kContext + offsetof(mcontext_t, pc);
  auto slot = [](uint64_t offset) {
    RegisterRule r;
    r.kind = RegisterRule::Kind::kAddress;
    r.ops = {ExprOp{DW_OP_breg31, offset, 0}};
    return r;
  };
  ExpressionRule rule;
  rule.cfa = {ExprOp{DW_OP_breg31, kSp, 0}, ExprOp{DW_OP_deref, 0, 0}};  // the interrupted SP
  for (int r = 0; r <= 30; ++r) rule.registers[r] = slot(kRegs + 8 * r);
  rule.registers[kRegPc] = slot(kPc);
  rule.return_address_register = kRegPc;  // the interrupted PC, exact
  rule.signal_frame = true;
  return rule;
}

#else

inline bool is_sigreturn_trampoline(uint64_t) { return false; }
inline ExpressionRule sigreturn_trampoline_rule() { return {}; }

#endif

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_SIGRETURN_TRAMPOLINE_LINUX_H_
