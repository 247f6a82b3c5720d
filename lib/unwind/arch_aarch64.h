// AArch64: `bl` puts the return address in x30 (LR); a function that calls others saves x29/x30
// as a frame record {x29, x30} and points x29 at it.
#ifndef INPROF_LIB_ARCH_AARCH64_H_
#define INPROF_LIB_ARCH_AARCH64_H_

#include <cstdint>

namespace inprof::internal {

inline constexpr const char* kArchName = "aarch64";
inline constexpr int kRegisterCount = 33;  // x0..x30 (0..30), sp (31), pc (32)
inline constexpr int kRegPc = 32;
inline constexpr int kRegSp = 31;
inline constexpr int kRegFp = 29;
inline constexpr int kRegLr = 30;
// CFI describes the caller's PC in the x30 column: "same value" there means it is still in LR.
inline constexpr int kRegReturnAddress = 30;

// Registers whose caller value is unchanged where the CFI says nothing about them: the
// callee-saved x19-x28, the frame pointer, and LR, which holds the return address until saved.
inline constexpr int kCfiDefaultSameValue[] = {19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30};

// Pointer authentication (-mbranch-protection=pac-ret, off by default in Debian 12's GCC) signs
// return addresses in their unused top bits; user-space code lies below 2^48, so clearing them
// gives the code address whether or not the code signs.
inline constexpr uint64_t code_address(uint64_t stored) {
  return stored & ((uint64_t{1} << 48) - 1);
}

// Whether the 8 code bytes before an address (b[7] just before it) end with a call: `bl`, `blr`
// or an authenticating `blraa`/`blrab` family instruction.
inline bool ends_with_call(const uint8_t (&b)[8]) {
  const uint32_t insn =
      uint32_t(b[4]) | uint32_t(b[5]) << 8 | uint32_t(b[6]) << 16 | uint32_t(b[7]) << 24;
  return (insn & 0xfc000000u) == 0x94000000u || (insn & 0xfffffc1fu) == 0xd63f0000u ||
         (insn & 0xfefff800u) == 0xd63f0800u;
}

// The calling function's registers at this point: PC, SP, FP, LR and the callee-saved x19-x28,
// as the CFI at that PC describes them. Inlined into the function whose stack is then copied
// from SP: an unwinder walks on from there.
__attribute__((always_inline)) inline void capture_own_registers(uint64_t* regs) {
  uint64_t pc, sp;
  asm volatile(
      "adr %0, .\n\t"
      "mov %1, sp\n\t"
      "stp x19, x20, [%2, #152]\n\t"
      "stp x21, x22, [%2, #168]\n\t"
      "stp x23, x24, [%2, #184]\n\t"
      "stp x25, x26, [%2, #200]\n\t"
      "stp x27, x28, [%2, #216]\n\t"
      "stp x29, x30, [%2, #232]"
      : "=&r"(pc), "=&r"(sp)
      : "r"(regs)
      : "memory");
  regs[kRegPc] = pc;
  regs[kRegSp] = sp;
}

}  // namespace inprof::internal

#endif  // INPROF_LIB_ARCH_AARCH64_H_
