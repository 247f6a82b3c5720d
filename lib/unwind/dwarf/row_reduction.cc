#include "unwind/dwarf/row_reduction.h"

#include "unwind/dwarf/dwarf_constants.h"
#include "unwind/dwarf/expression_decode.h"

namespace inprof::internal {
namespace {

// One register's rule as operations. `same`: unchanged (no operations); an empty `ops` that is
// not `same` is "undefined"; `failed`: an expression we cannot decode.
struct RuleOps {
  bool failed = false;
  bool same = false;
  std::vector<ExprOp> ops;
};

RuleOps register_ops(const CfiRow& row, int reg, const MemoryView& view) {
  using Kind = CfiRegister::Kind;
  const CfiRegister& r = row.registers[reg];
  RuleOps out;
  switch (r.kind) {
    case Kind::kUndefined:
      break;
    case Kind::kSameValue:
      out.same = true;
      break;
    case Kind::kOffset:
    case Kind::kValOffset:
      out.ops.push_back(ExprOp{DW_OP_call_frame_cfa, 0, 0});
      if (r.value != 0) {
        out.ops.push_back(ExprOp{DW_OP_plus_uconst, static_cast<uint64_t>(r.value), 0});
      }
      if (r.kind == Kind::kValOffset) out.ops.push_back(ExprOp{DW_OP_stack_value, 0, 0});
      break;
    case Kind::kRegister:
      out.ops.push_back(ExprOp{DW_OP_regx, static_cast<uint64_t>(r.value), 0});
      break;
    case Kind::kExpression:
    case Kind::kValExpression:
      out.ops.push_back(ExprOp{DW_OP_call_frame_cfa, 0, 0});
      out.failed = !decode_expression(view, static_cast<uint64_t>(r.value), r.length, &out.ops);
      if (r.kind == Kind::kValExpression) out.ops.push_back(ExprOp{DW_OP_stack_value, 0, 0});
      break;
  }
  return out;
}

bool cfa_ops(const CfiRow& row, const MemoryView& view, std::vector<ExprOp>* ops) {
  if (!row.cfa_is_expression) {
    ops->push_back(ExprOp{DW_OP_bregx, row.cfa_register, static_cast<uint64_t>(row.cfa_offset)});
    return true;
  }
  return decode_expression(view, row.cfa_expression, row.cfa_expression_length, ops) &&
         !ops->empty();
}

// Matches "DW_OP_call_frame_cfa [, DW_OP_plus_uconst k]": a slot at CFA + k.
bool cfa_slot(const RuleOps& r, int32_t* offset) {
  const std::vector<ExprOp>& ops = r.ops;
  if (r.failed || ops.empty() || ops[0].atom != DW_OP_call_frame_cfa) return false;
  if (ops.size() == 1) {
    *offset = 0;
    return true;
  }
  if (ops.size() == 2 && ops[1].atom == DW_OP_plus_uconst) {
    auto k = static_cast<int64_t>(ops[1].number);
    if (k < INT32_MIN || k > INT32_MAX) return false;
    *offset = static_cast<int32_t>(k);
    return true;
  }
  return false;
}

// The simple shape, if the row has it: CFA = SP/FP + k, the return address in a CFA slot (or
// still in LR), FP unchanged or in a slot.
bool reduce_simple(const CfiRow& row, const std::vector<ExprOp>& cfa, const RuleOps& ra,
                   const MemoryView& view, UnwindRule* rule) {
  if (row.signal_frame || row.return_address_register != kRegReturnAddress || cfa.size() != 1) {
    return false;
  }
  uint64_t cfa_register = UINT64_MAX;
  int64_t cfa_offset = 0;
  if (cfa[0].atom == DW_OP_bregx) {
    cfa_register = cfa[0].number;
    cfa_offset = static_cast<int64_t>(cfa[0].number2);
  } else if (cfa[0].atom >= DW_OP_breg0 && cfa[0].atom <= DW_OP_breg31) {  // an expression's
    cfa_register = cfa[0].atom - DW_OP_breg0;
    cfa_offset = static_cast<int64_t>(cfa[0].number);
  }
  int32_t ra_offset = 0, fp_offset = 0;
  const bool ra_in_lr = kHasLinkRegister && ra.same;
  if ((cfa_register != static_cast<uint64_t>(kRegSp) &&
       cfa_register != static_cast<uint64_t>(kRegFp)) ||
      cfa_offset < INT32_MIN || cfa_offset > INT32_MAX || !(ra_in_lr || cfa_slot(ra, &ra_offset))) {
    return false;
  }
  const RuleOps fp = register_ops(row, kRegFp, view);
  const bool fp_same = fp.same;
  const bool fp_in_slot = cfa_slot(fp, &fp_offset);
  if (!fp_same && !fp_in_slot) return false;
  rule->kind = RuleKind::kSimple;
  rule->cfa_register = static_cast<uint8_t>(cfa_register);
  rule->cfa_offset = static_cast<int32_t>(cfa_offset);
  rule->ra_offset = ra_offset;
  rule->ra_in_lr = ra_in_lr;
  rule->fp_saved = fp_in_slot;
  rule->fp_offset = fp_offset;
  return true;
}

}  // namespace

UnwindRule reduce_row(const CfiRow& row, const MemoryView& view,
                      std::vector<ExpressionRule>* expressions) {
  UnwindRule rule;
  rule.signal_frame = row.signal_frame;
  if (row.return_address_register >= static_cast<uint64_t>(kRegisterCount)) return rule;
  const int ra_register = static_cast<int>(row.return_address_register);

  std::vector<ExprOp> cfa;
  if (!cfa_ops(row, view, &cfa)) return rule;  // kMissing
  const RuleOps ra = register_ops(row, ra_register, view);
  if (ra.failed) return rule;
  if (!ra.same && ra.ops.empty()) {
    rule.kind = RuleKind::kEndOfStack;  // "undefined": nothing called this frame
    return rule;
  }
  if (reduce_simple(row, cfa, ra, view, &rule)) return rule;

  // Everything else keeps its expressions.
  ExpressionRule full;
  full.cfa = std::move(cfa);
  full.return_address_register = ra_register;
  full.signal_frame = row.signal_frame;
  for (int r = 0; r < kRegisterCount; ++r) {
    RuleOps ops = register_ops(row, r, view);
    RegisterRule& rr = full.registers[r];
    if (ops.failed) {
      rr.kind = RegisterRule::Kind::kUndefined;
    } else if (ops.ops.empty()) {
      rr.kind = ops.same ? RegisterRule::Kind::kSame : RegisterRule::Kind::kUndefined;
    } else if (ops.ops.back().atom == DW_OP_stack_value) {
      rr.kind = RegisterRule::Kind::kValue;
      ops.ops.pop_back();
      rr.ops = std::move(ops.ops);
    } else {
      rr.kind = RegisterRule::Kind::kAddress;
      rr.ops = std::move(ops.ops);
    }
  }
  rule.kind = RuleKind::kExpression;
  rule.expression_index = static_cast<uint32_t>(expressions->size());
  expressions->push_back(std::move(full));
  return rule;
}

}  // namespace inprof::internal
