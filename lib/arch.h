// The CPU architecture the library is built for, and the DWARF numbers of the registers the
// unwinders need. Registers are stored by DWARF number so that a CFI unwinder can use them as is.
#ifndef INPROF_LIB_ARCH_H_
#define INPROF_LIB_ARCH_H_

namespace inprof::internal {

#if defined(__x86_64__) || defined(_M_X64)
inline constexpr const char* kArchName = "x86_64";
inline constexpr int kRegisterCount = 17;  // rax..r15 (0..15), return address / rip (16)
inline constexpr int kRegPc = 16;
inline constexpr int kRegSp = 7;
inline constexpr int kRegFp = 6;   // rbp
inline constexpr int kRegLr = -1;  // none: the return address lives on the stack
#elif defined(__aarch64__) || defined(_M_ARM64)
inline constexpr const char* kArchName = "aarch64";
inline constexpr int kRegisterCount = 33;  // x0..x30, sp (31), pc (32)
inline constexpr int kRegPc = 32;
inline constexpr int kRegSp = 31;
inline constexpr int kRegFp = 29;
inline constexpr int kRegLr = 30;
#else
#error "inprof supports x86-64 and aarch64"
#endif

}  // namespace inprof::internal

#endif  // INPROF_LIB_ARCH_H_
