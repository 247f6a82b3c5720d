#include "unwind/dwarf/expression_decode.h"

#include "unwind/dwarf/dwarf_constants.h"

namespace inprof::internal {
namespace {

// Operations without operands.
bool bare(uint8_t atom) {
  if ((atom >= DW_OP_lit0 && atom <= DW_OP_lit31) || (atom >= DW_OP_reg0 && atom <= DW_OP_reg31)) {
    return true;
  }
  switch (atom) {
    case DW_OP_deref:
    case DW_OP_dup:
    case DW_OP_drop:
    case DW_OP_over:
    case DW_OP_swap:
    case DW_OP_rot:
    case DW_OP_xderef:
    case DW_OP_abs:
    case DW_OP_and:
    case DW_OP_div:
    case DW_OP_minus:
    case DW_OP_mod:
    case DW_OP_mul:
    case DW_OP_neg:
    case DW_OP_not:
    case DW_OP_or:
    case DW_OP_plus:
    case DW_OP_shl:
    case DW_OP_shr:
    case DW_OP_shra:
    case DW_OP_xor:
    case DW_OP_eq:
    case DW_OP_ge:
    case DW_OP_gt:
    case DW_OP_le:
    case DW_OP_lt:
    case DW_OP_ne:
    case DW_OP_nop:
    case DW_OP_push_object_address:
    case DW_OP_form_tls_address:
    case DW_OP_call_frame_cfa:
    case DW_OP_stack_value:
      return true;
    default:
      return false;
  }
}

uint64_t sign_extend(uint64_t v, int bits) {
  const uint64_t sign = uint64_t{1} << (bits - 1);
  return (v ^ sign) - sign;
}

// Reads the operands of `op.atom`.
bool operands(MemoryReader& r, ExprOp& op) {
  const uint8_t a = op.atom;
  uint8_t b1;
  uint16_t b2;
  uint32_t b4;
  int64_t s;
  if (bare(a)) return true;
  if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
    if (!r.sleb(&s)) return false;
    op.number = static_cast<uint64_t>(s);
    return true;
  }
  switch (a) {
    case DW_OP_addr:
    case DW_OP_const8u:
    case DW_OP_const8s:
      return r.u64(&op.number);
    case DW_OP_const1u:
    case DW_OP_const1s:
    case DW_OP_pick:
    case DW_OP_deref_size:
    case DW_OP_xderef_size:
      if (!r.u8(&b1)) return false;
      op.number = a == DW_OP_const1s ? sign_extend(b1, 8) : b1;
      return true;
    case DW_OP_const2u:
    case DW_OP_const2s:
    case DW_OP_skip:
    case DW_OP_bra:
    case DW_OP_call2:
      if (!r.u16(&b2)) return false;
      op.number = (a == DW_OP_const2u || a == DW_OP_call2) ? b2 : sign_extend(b2, 16);
      return true;
    case DW_OP_const4u:
    case DW_OP_const4s:
    case DW_OP_call4:
      if (!r.u32(&b4)) return false;
      op.number = a == DW_OP_const4s ? sign_extend(b4, 32) : b4;
      return true;
    case DW_OP_constu:
    case DW_OP_plus_uconst:
    case DW_OP_regx:
    case DW_OP_piece:
      return r.uleb(&op.number);
    case DW_OP_consts:
    case DW_OP_fbreg:
      if (!r.sleb(&s)) return false;
      op.number = static_cast<uint64_t>(s);
      return true;
    case DW_OP_bregx:
      if (!r.uleb(&op.number) || !r.sleb(&s)) return false;
      op.number2 = static_cast<uint64_t>(s);
      return true;
    case DW_OP_bit_piece:
      return r.uleb(&op.number) && r.uleb(&op.number2);
    default:
      return false;
  }
}

}  // namespace

bool decode_expression(const MemoryView& view, uint64_t address, uint64_t length,
                       std::vector<ExprOp>* ops) {
  if (length > UINT64_MAX - address) return false;
  MemoryReader r(view, address, address + length);
  while (!r.at_end()) {  // every operation takes at least a byte: bounded by `length`
    ExprOp op;
    if (!r.u8(&op.atom) || !operands(r, op)) return false;
    ops->push_back(op);
  }
  return r.ok();
}

}  // namespace inprof::internal
