// x86-64: the return address is pushed by `call`; RBP chains frame records.
#ifndef INPROF_LIB_ARCH_X86_64_H_
#define INPROF_LIB_ARCH_X86_64_H_

#include <cstdint>

namespace inprof::internal {

inline constexpr const char* kArchName = "x86_64";
inline constexpr int kRegisterCount = 17;  // rax..r15 (0..15), return address / rip (16)
inline constexpr int kRegPc = 16;
inline constexpr int kRegSp = 7;
inline constexpr int kRegFp = 6;   // rbp
inline constexpr int kRegLr = -1;  // none: the return address lives on the stack
// The column CFI uses for the return address (the caller's PC).
inline constexpr int kRegReturnAddress = 16;

// Registers whose caller value is unchanged where the CFI says nothing about them: the psABI's
// callee-saved rbx, rbp, r12-r15. (libdw's table has rax in place of rbx, an error of its own.)
inline constexpr int kCfiDefaultSameValue[] = {3, 6, 12, 13, 14, 15};

// A return address as stored is the code address.
inline constexpr uint64_t code_address(uint64_t stored) { return stored; }

// Whether the 8 code bytes before an address (b[7] just before it) end with a call instruction,
// as the bytes before a return address do: `call rel32`, or `call r/m64` (FF /2, with an
// optional REX prefix) whose length, from its ModRM and SIB bytes, ends exactly there.
inline bool ends_with_call(const uint8_t (&b)[8]) {
  if (b[3] == 0xe8) return true;
  for (int k = 1; k <= 6; ++k) {
    if (b[k] != 0xff) continue;
    const uint8_t modrm = b[k + 1];
    if (((modrm >> 3) & 7) != 2) continue;
    const int mod = modrm >> 6, rm = modrm & 7;
    int length = 2;
    if (mod != 3 && rm == 4) ++length;  // SIB
    if (mod == 1) length += 1;
    if (mod == 2 || (mod == 0 && rm == 5)) length += 4;
    if (mod == 0 && rm == 4 && k + 2 < 8 && (b[k + 2] & 7) == 5) length += 4;  // SIB, no base
    if (k + length == 8) return true;
  }
  return false;
}

// The calling function's registers at this point: PC, SP, RBP and the callee-saved ones, as the
// CFI at that PC describes them (nothing of the caller's frame moves meanwhile). Inlined into
// the function whose stack is then copied from SP: an unwinder walks on from there.
__attribute__((always_inline)) inline void capture_own_registers(uint64_t* regs) {
  uint64_t pc, sp, fp, rbx, r12, r13, r14, r15;
  asm volatile(
      "leaq 0(%%rip), %0\n\t"
      "movq %%rsp, %1\n\t"
      "movq %%rbp, %2\n\t"
      "movq %%rbx, %3\n\t"
      "movq %%r12, %4\n\t"
      "movq %%r13, %5\n\t"
      "movq %%r14, %6\n\t"
      "movq %%r15, %7"
      : "=r"(pc), "=r"(sp), "=r"(fp), "=r"(rbx), "=r"(r12), "=r"(r13), "=r"(r14), "=r"(r15));
  regs[kRegPc] = pc;
  regs[kRegSp] = sp;
  regs[kRegFp] = fp;
  regs[3] = rbx;
  regs[12] = r12;
  regs[13] = r13;
  regs[14] = r14;
  regs[15] = r15;
}

}  // namespace inprof::internal

#endif  // INPROF_LIB_ARCH_X86_64_H_
