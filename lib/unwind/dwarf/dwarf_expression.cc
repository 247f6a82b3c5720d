#include "unwind/dwarf/dwarf_expression.h"

#include <utility>

#include "unwind/dwarf/dwarf_constants.h"

namespace inprof::internal {
namespace {

// The value of x OP b for a two-operand DWARF operation (comparisons are signed).
uint64_t binary_op(uint8_t a, uint64_t x, uint64_t b) {
  const auto sx = static_cast<int64_t>(x), sb = static_cast<int64_t>(b);
  uint64_t r = 0;
  switch (a) {
    case DW_OP_plus:
      r = x + b;
      break;
    case DW_OP_minus:
      r = x - b;
      break;
    case DW_OP_mul:
      r = x * b;
      break;
    case DW_OP_and:
      r = x & b;
      break;
    case DW_OP_or:
      r = x | b;
      break;
    case DW_OP_xor:
      r = x ^ b;
      break;
    case DW_OP_shl:
      r = b < 64 ? x << b : 0;
      break;
    case DW_OP_shr:
      r = b < 64 ? x >> b : 0;
      break;
    case DW_OP_shra:
      r = static_cast<uint64_t>(b < 64 ? sx >> b : (sx < 0 ? -1 : 0));
      break;
    case DW_OP_eq:
      r = sx == sb;
      break;
    case DW_OP_ne:
      r = sx != sb;
      break;
    case DW_OP_lt:
      r = sx < sb;
      break;
    case DW_OP_le:
      r = sx <= sb;
      break;
    case DW_OP_gt:
      r = sx > sb;
      break;
    case DW_OP_ge:
      r = sx >= sb;
      break;
  }
  return r;
}

}  // namespace

std::optional<uint64_t> evaluate_expression(std::span<const ExprOp> ops,
                                            const ExpressionContext& context, bool* is_value) {
  constexpr int kStackDepth = 16;
  uint64_t stack[kStackDepth];
  int top = 0;  // number of entries
  bool value = false;
  auto push = [&](uint64_t v) {
    if (top == kStackDepth) return false;
    stack[top++] = v;
    return true;
  };
  auto reg = [&](uint64_t n) -> std::optional<uint64_t> {
    if (n >= static_cast<uint64_t>(kRegisterCount)) return std::nullopt;
    return context.registers[n];
  };
  for (const ExprOp& op : ops) {
    const uint8_t a = op.atom;
    if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
      if (!push(a - DW_OP_lit0)) return std::nullopt;
      continue;
    }
    if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
      auto r = reg(a - DW_OP_breg0);
      if (!r || !push(*r + op.number)) return std::nullopt;
      continue;
    }
    switch (a) {
      case DW_OP_bregx: {
        auto r = reg(op.number);
        if (!r || !push(*r + op.number2)) return std::nullopt;
        break;
      }
      case DW_OP_call_frame_cfa:
        if (!context.cfa || !push(*context.cfa)) return std::nullopt;
        break;
      case DW_OP_const1u:
      case DW_OP_const1s:
      case DW_OP_const2u:
      case DW_OP_const2s:
      case DW_OP_const4u:
      case DW_OP_const4s:
      case DW_OP_const8u:
      case DW_OP_const8s:
      case DW_OP_constu:
      case DW_OP_consts:
        if (!push(op.number)) return std::nullopt;
        break;
      case DW_OP_dup:
        if (top < 1 || !push(stack[top - 1])) return std::nullopt;
        break;
      case DW_OP_drop:
        if (top < 1) return std::nullopt;
        --top;
        break;
      case DW_OP_over:
        if (top < 2 || !push(stack[top - 2])) return std::nullopt;
        break;
      case DW_OP_swap:
        if (top < 2) return std::nullopt;
        std::swap(stack[top - 1], stack[top - 2]);
        break;
      case DW_OP_deref: {
        if (top < 1) return std::nullopt;
        uint64_t word;
        if (!context.stack->read_word(stack[top - 1], &word)) return std::nullopt;
        stack[top - 1] = word;
        break;
      }
      case DW_OP_plus_uconst:
        if (top < 1) return std::nullopt;
        stack[top - 1] += op.number;
        break;
      case DW_OP_neg:
        if (top < 1) return std::nullopt;
        stack[top - 1] = -stack[top - 1];
        break;
      case DW_OP_not:
        if (top < 1) return std::nullopt;
        stack[top - 1] = ~stack[top - 1];
        break;
      case DW_OP_plus:
      case DW_OP_minus:
      case DW_OP_mul:
      case DW_OP_and:
      case DW_OP_or:
      case DW_OP_xor:
      case DW_OP_shl:
      case DW_OP_shr:
      case DW_OP_shra:
      case DW_OP_eq:
      case DW_OP_ne:
      case DW_OP_lt:
      case DW_OP_le:
      case DW_OP_gt:
      case DW_OP_ge: {
        if (top < 2) return std::nullopt;
        const uint64_t b = stack[--top];
        const uint64_t x = stack[top - 1];
        stack[top - 1] = binary_op(a, x, b);
        break;
      }
      case DW_OP_stack_value:
        value = true;
        break;
      case DW_OP_nop:
        break;
      default:
        return std::nullopt;  // not a CFI operation we know: do not guess
    }
  }
  if (top < 1) return std::nullopt;
  if (is_value) *is_value = value;
  return stack[top - 1];
}

}  // namespace inprof::internal
