// How to find the caller's frame from one code address, reduced from DWARF CFI.
//
// Most addresses need only a "simple" rule — CFA = SP or FP + offset, the return address and the
// saved frame pointer at fixed offsets from the CFA (or, on architectures with a link register,
// the return address still in LR) — which a cache can hold in a few bytes and
// the unwinder applies in a handful of instructions (framehop's idea). Anything else (PLT stubs,
// signal trampolines, stack realignment) keeps its DWARF expressions and is evaluated in full.
#ifndef INPROF_LIB_DWARF_UNWIND_RULE_H_
#define INPROF_LIB_DWARF_UNWIND_RULE_H_

#include <cstdint>
#include <vector>

#include "unwind/arch.h"

namespace inprof::internal {

enum class RuleKind : uint8_t {
  kMissing,     // no CFI for this address (JIT code, a module without tables): use frame pointers
  kEndOfStack,  // the return address is undefined: this is the outermost frame
  kSimple,      // the fields below
  kExpression,  // evaluate the ExpressionRule at `expression_index`
};

struct UnwindRule {
  RuleKind kind = RuleKind::kMissing;
  bool signal_frame = false;  // the caller was interrupted, not calling: its PC is exact
  uint8_t cfa_register = 0;   // kSimple: SP or FP (DWARF number)
  bool fp_saved = false;      // kSimple: else the caller's FP is this frame's
  bool ra_in_lr = false;      // kSimple: the return address is still in LR (no ra_offset)
  int32_t cfa_offset = 0;
  int32_t ra_offset = 0;  // kSimple: return address at CFA + ra_offset
  int32_t fp_offset = 0;  // kSimple: caller's FP at CFA + fp_offset, if fp_saved
  uint32_t expression_index = 0;
};

// One DWARF expression operation: its opcode and up to two operands.
struct ExprOp {
  uint8_t atom = 0;
  uint64_t number = 0;
  uint64_t number2 = 0;
};

struct RegisterRule {
  enum class Kind : uint8_t {
    kSame,       // unchanged from this frame
    kUndefined,  // cannot be recovered
    kAddress,    // saved in memory at the address the expression yields
    kValue,      // the expression yields the value itself
  };
  Kind kind = Kind::kSame;
  std::vector<ExprOp> ops;
};

struct ExpressionRule {
  std::vector<ExprOp> cfa;
  RegisterRule registers[kRegisterCount];
  int return_address_register = kRegReturnAddress;
  bool signal_frame = false;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_DWARF_UNWIND_RULE_H_
