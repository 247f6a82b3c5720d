// The CPU architecture the library is built for: the DWARF numbers of the registers the
// unwinders need and the few facts about frames that differ between architectures. Registers are
// stored by DWARF number so that a CFI unwinder can use them as is. Everything else in lib/ is
// architecture-neutral and reaches the architecture only through these names.
#ifndef INPROF_LIB_ARCH_H_
#define INPROF_LIB_ARCH_H_

#if defined(__x86_64__) || defined(_M_X64)
#include "unwind/arch_x86_64.h"
#elif defined(__aarch64__) || defined(_M_ARM64)
#include "unwind/arch_aarch64.h"
#else
#error "inprof supports x86-64 and aarch64"
#endif

namespace inprof::internal {

// Every architecture we support keeps a frame record of {caller's FP, return address} at FP.
inline constexpr int kFrameRecordSize = 16;
// Whether a call leaves the return address in a register (LR) rather than on the stack: then a
// function that has not saved it yet (a leaf, a prologue, an epilogue) returns through LR.
inline constexpr bool kHasLinkRegister = kRegLr >= 0;

static_assert(kRegPc < kRegisterCount && kRegSp < kRegisterCount && kRegFp < kRegisterCount &&
              kRegLr < kRegisterCount && kRegReturnAddress < kRegisterCount);

}  // namespace inprof::internal

#endif  // INPROF_LIB_ARCH_H_
