// x86-64: the interrupted registers in a signal's ucontext, by DWARF number.
#ifndef INPROF_PLATFORM_LINUX_UCONTEXT_REGISTERS_X86_64_H_
#define INPROF_PLATFORM_LINUX_UCONTEXT_REGISTERS_X86_64_H_

#include <ucontext.h>

#include <cstdint>

#include "unwind/arch.h"

namespace inprof::internal {

// SUSPENDED: async-signal-safe.
inline void capture_registers(const ucontext_t* uc, uint64_t* regs) {
  const greg_t* g = uc->uc_mcontext.gregs;
  // DWARF numbering: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip.
  static constexpr int kOrder[] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                                   REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                   REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};
  static_assert(sizeof(kOrder) / sizeof(kOrder[0]) == kRegisterCount);
  for (int i = 0; i < kRegisterCount; ++i) regs[i] = static_cast<uint64_t>(g[kOrder[i]]);
}

// SUSPENDED: the interrupted stack pointer.
inline uint64_t context_sp(const ucontext_t* uc) {
  return static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RSP]);
}

// A hint for a spin-wait loop.
inline void cpu_relax() { __builtin_ia32_pause(); }

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_UCONTEXT_REGISTERS_X86_64_H_
