// AArch64: the interrupted registers in a signal's ucontext, by DWARF number. x30 (LR) is kept:
// in a leaf or a prologue it holds the return address that no frame record has yet.
#ifndef INPROF_PLATFORM_LINUX_UCONTEXT_REGISTERS_AARCH64_H_
#define INPROF_PLATFORM_LINUX_UCONTEXT_REGISTERS_AARCH64_H_

#include <ucontext.h>

#include <cstdint>

#include "unwind/arch.h"

namespace inprof::internal {

// SUSPENDED: async-signal-safe.
inline void capture_registers(const ucontext_t* uc, uint64_t* regs) {
  static_assert(kRegisterCount == 33 && kRegSp == 31 && kRegPc == 32);
  for (int i = 0; i < 31; ++i) regs[i] = uc->uc_mcontext.regs[i];  // x0..x30
  regs[kRegSp] = uc->uc_mcontext.sp;
  regs[kRegPc] = uc->uc_mcontext.pc;
}

// A hint for a spin-wait loop.
inline void cpu_relax() { asm volatile("yield" ::: "memory"); }

// SUSPENDED: the interrupted stack pointer.
inline uint64_t context_sp(const ucontext_t* uc) { return uc->uc_mcontext.sp; }

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_UCONTEXT_REGISTERS_AARCH64_H_
