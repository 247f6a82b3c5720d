// DWARF expression bytes (from CFI) decoded into ExprOps, the form dwarf_expression.cc evaluates:
// one ExprOp per operation, its operands in `number` (and `number2` for two), signed ones
// sign-extended.
#ifndef INPROF_LIB_DWARF_EXPRESSION_DECODE_H_
#define INPROF_LIB_DWARF_EXPRESSION_DECODE_H_

#include <cstdint>
#include <vector>

#include "unwind/dwarf/memory_view.h"
#include "unwind/dwarf/unwind_rule.h"

namespace inprof::internal {

// Appends the operations of the `length` bytes at `address`; false for truncated bytes or an
// operation whose operands we do not know (nothing sensible can follow it).
bool decode_expression(const MemoryView& view, uint64_t address, uint64_t length,
                       std::vector<ExprOp>* ops);

}  // namespace inprof::internal

#endif  // INPROF_LIB_DWARF_EXPRESSION_DECODE_H_
