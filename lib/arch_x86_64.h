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

// A return address as stored is the code address.
inline constexpr uint64_t code_address(uint64_t stored) { return stored; }

}  // namespace inprof::internal

#endif  // INPROF_LIB_ARCH_X86_64_H_
