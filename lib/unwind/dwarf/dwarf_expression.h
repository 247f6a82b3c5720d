// A small DWARF expression evaluator for CFI: the operations compilers and libc emit in
// .eh_frame (register-relative addresses, constants, arithmetic and comparisons, dereference).
// Memory comes only from the stack copy; anything else makes the evaluation fail.
#ifndef INPROF_LIB_DWARF_DWARF_EXPRESSION_H_
#define INPROF_LIB_DWARF_DWARF_EXPRESSION_H_

#include <cstdint>
#include <optional>
#include <span>

#include "unwind/dwarf/unwind_rule.h"
#include "unwind/stack_snapshot.h"

namespace inprof::internal {

struct ExpressionContext {
  const uint64_t* registers;  // kRegisterCount values, by DWARF number
  const StackSnapshot* stack;
  std::optional<uint64_t> cfa;  // for DW_OP_call_frame_cfa
};

// Evaluates `ops` and returns the value on top of the stack; `*is_value` tells whether the
// expression ended in DW_OP_stack_value (a value, not an address). Nothing on failure.
std::optional<uint64_t> evaluate_expression(std::span<const ExprOp> ops,
                                            const ExpressionContext& context,
                                            bool* is_value = nullptr);

}  // namespace inprof::internal

#endif  // INPROF_LIB_DWARF_DWARF_EXPRESSION_H_
