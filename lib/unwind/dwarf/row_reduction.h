// A CfiRow reduced to an UnwindRule: the simple shape where it fits (CFA = SP/FP + k, return
// address and FP unchanged or in CFA slots), else an ExpressionRule with every register's rule
// as DWARF operations, in the forms libdw gave them before inprof read CFI itself:
//   CFA = reg + k                 -> DW_OP_bregx reg k
//   saved at CFA + k              -> DW_OP_call_frame_cfa [DW_OP_plus_uconst k]
//   is CFA + k (val_offset)       -> the same, a value
//   in register n                 -> DW_OP_regx n (not evaluated: the register is lost)
//   expression E / val_expression -> DW_OP_call_frame_cfa E (the CFA pushed first, as DWARF says)
#ifndef INPROF_LIB_DWARF_ROW_REDUCTION_H_
#define INPROF_LIB_DWARF_ROW_REDUCTION_H_

#include <vector>

#include "unwind/dwarf/cfi_row.h"
#include "unwind/dwarf/memory_view.h"
#include "unwind/dwarf/unwind_rule.h"

namespace inprof::internal {

// `view` holds the row's expression bytes. A kExpression rule's ExpressionRule is appended to
// `expressions` and the rule holds its index.
UnwindRule reduce_row(const CfiRow& row, const MemoryView& view,
                      std::vector<ExpressionRule>* expressions);

}  // namespace inprof::internal

#endif  // INPROF_LIB_DWARF_ROW_REDUCTION_H_
