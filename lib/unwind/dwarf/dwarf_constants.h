// The DWARF numbers inprof's CFI reader and expression evaluator use: expression operations
// (DW_OP_*), call frame instructions (DW_CFA_*) and .eh_frame pointer encodings (DW_EH_PE_*), with
// the values the DWARF standard (and the LSB, for DW_EH_PE_*) gives them. Ours, so that the
// library needs no <dwarf.h>.
#ifndef INPROF_LIB_DWARF_DWARF_CONSTANTS_H_
#define INPROF_LIB_DWARF_DWARF_CONSTANTS_H_

#include <cstdint>

namespace inprof::internal {

// Expression operations.
inline constexpr uint8_t DW_OP_addr = 0x03;
inline constexpr uint8_t DW_OP_deref = 0x06;
inline constexpr uint8_t DW_OP_const1u = 0x08;
inline constexpr uint8_t DW_OP_const1s = 0x09;
inline constexpr uint8_t DW_OP_const2u = 0x0a;
inline constexpr uint8_t DW_OP_const2s = 0x0b;
inline constexpr uint8_t DW_OP_const4u = 0x0c;
inline constexpr uint8_t DW_OP_const4s = 0x0d;
inline constexpr uint8_t DW_OP_const8u = 0x0e;
inline constexpr uint8_t DW_OP_const8s = 0x0f;
inline constexpr uint8_t DW_OP_constu = 0x10;
inline constexpr uint8_t DW_OP_consts = 0x11;
inline constexpr uint8_t DW_OP_dup = 0x12;
inline constexpr uint8_t DW_OP_drop = 0x13;
inline constexpr uint8_t DW_OP_over = 0x14;
inline constexpr uint8_t DW_OP_pick = 0x15;
inline constexpr uint8_t DW_OP_swap = 0x16;
inline constexpr uint8_t DW_OP_rot = 0x17;
inline constexpr uint8_t DW_OP_xderef = 0x18;
inline constexpr uint8_t DW_OP_abs = 0x19;
inline constexpr uint8_t DW_OP_and = 0x1a;
inline constexpr uint8_t DW_OP_div = 0x1b;
inline constexpr uint8_t DW_OP_minus = 0x1c;
inline constexpr uint8_t DW_OP_mod = 0x1d;
inline constexpr uint8_t DW_OP_mul = 0x1e;
inline constexpr uint8_t DW_OP_neg = 0x1f;
inline constexpr uint8_t DW_OP_not = 0x20;
inline constexpr uint8_t DW_OP_or = 0x21;
inline constexpr uint8_t DW_OP_plus = 0x22;
inline constexpr uint8_t DW_OP_plus_uconst = 0x23;
inline constexpr uint8_t DW_OP_shl = 0x24;
inline constexpr uint8_t DW_OP_shr = 0x25;
inline constexpr uint8_t DW_OP_shra = 0x26;
inline constexpr uint8_t DW_OP_xor = 0x27;
inline constexpr uint8_t DW_OP_bra = 0x28;
inline constexpr uint8_t DW_OP_eq = 0x29;
inline constexpr uint8_t DW_OP_ge = 0x2a;
inline constexpr uint8_t DW_OP_gt = 0x2b;
inline constexpr uint8_t DW_OP_le = 0x2c;
inline constexpr uint8_t DW_OP_lt = 0x2d;
inline constexpr uint8_t DW_OP_ne = 0x2e;
inline constexpr uint8_t DW_OP_skip = 0x2f;
inline constexpr uint8_t DW_OP_lit0 = 0x30;
inline constexpr uint8_t DW_OP_lit31 = 0x4f;
inline constexpr uint8_t DW_OP_reg0 = 0x50;
inline constexpr uint8_t DW_OP_reg31 = 0x6f;
inline constexpr uint8_t DW_OP_breg0 = 0x70;
inline constexpr uint8_t DW_OP_breg31 = 0x8f;
inline constexpr uint8_t DW_OP_regx = 0x90;
inline constexpr uint8_t DW_OP_fbreg = 0x91;
inline constexpr uint8_t DW_OP_bregx = 0x92;
inline constexpr uint8_t DW_OP_piece = 0x93;
inline constexpr uint8_t DW_OP_deref_size = 0x94;
inline constexpr uint8_t DW_OP_xderef_size = 0x95;
inline constexpr uint8_t DW_OP_nop = 0x96;
inline constexpr uint8_t DW_OP_push_object_address = 0x97;
inline constexpr uint8_t DW_OP_call2 = 0x98;
inline constexpr uint8_t DW_OP_call4 = 0x99;
inline constexpr uint8_t DW_OP_form_tls_address = 0x9b;
inline constexpr uint8_t DW_OP_call_frame_cfa = 0x9c;
inline constexpr uint8_t DW_OP_bit_piece = 0x9d;
inline constexpr uint8_t DW_OP_stack_value = 0x9f;

// Call frame instructions: three packed in the top two bits of the byte, the rest whole.
inline constexpr uint8_t DW_CFA_advance_loc = 0x40;
inline constexpr uint8_t DW_CFA_offset = 0x80;
inline constexpr uint8_t DW_CFA_restore = 0xc0;
inline constexpr uint8_t DW_CFA_nop = 0x00;
inline constexpr uint8_t DW_CFA_set_loc = 0x01;
inline constexpr uint8_t DW_CFA_advance_loc1 = 0x02;
inline constexpr uint8_t DW_CFA_advance_loc2 = 0x03;
inline constexpr uint8_t DW_CFA_advance_loc4 = 0x04;
inline constexpr uint8_t DW_CFA_offset_extended = 0x05;
inline constexpr uint8_t DW_CFA_restore_extended = 0x06;
inline constexpr uint8_t DW_CFA_undefined = 0x07;
inline constexpr uint8_t DW_CFA_same_value = 0x08;
inline constexpr uint8_t DW_CFA_register = 0x09;
inline constexpr uint8_t DW_CFA_remember_state = 0x0a;
inline constexpr uint8_t DW_CFA_restore_state = 0x0b;
inline constexpr uint8_t DW_CFA_def_cfa = 0x0c;
inline constexpr uint8_t DW_CFA_def_cfa_register = 0x0d;
inline constexpr uint8_t DW_CFA_def_cfa_offset = 0x0e;
inline constexpr uint8_t DW_CFA_def_cfa_expression = 0x0f;
inline constexpr uint8_t DW_CFA_expression = 0x10;
inline constexpr uint8_t DW_CFA_offset_extended_sf = 0x11;
inline constexpr uint8_t DW_CFA_def_cfa_sf = 0x12;
inline constexpr uint8_t DW_CFA_def_cfa_offset_sf = 0x13;
inline constexpr uint8_t DW_CFA_val_offset = 0x14;
inline constexpr uint8_t DW_CFA_val_offset_sf = 0x15;
inline constexpr uint8_t DW_CFA_val_expression = 0x16;
inline constexpr uint8_t DW_CFA_GNU_window_save = 0x2d;  // aarch64: negate_ra_state
inline constexpr uint8_t DW_CFA_GNU_args_size = 0x2e;
inline constexpr uint8_t DW_CFA_GNU_negative_offset_extended = 0x2f;

// .eh_frame pointer encodings: a value format in the low nibble, how to apply it above.
inline constexpr uint8_t DW_EH_PE_absptr = 0x00;
inline constexpr uint8_t DW_EH_PE_uleb128 = 0x01;
inline constexpr uint8_t DW_EH_PE_udata2 = 0x02;
inline constexpr uint8_t DW_EH_PE_udata4 = 0x03;
inline constexpr uint8_t DW_EH_PE_udata8 = 0x04;
inline constexpr uint8_t DW_EH_PE_signed = 0x08;
inline constexpr uint8_t DW_EH_PE_sleb128 = 0x09;
inline constexpr uint8_t DW_EH_PE_sdata2 = 0x0a;
inline constexpr uint8_t DW_EH_PE_sdata4 = 0x0b;
inline constexpr uint8_t DW_EH_PE_sdata8 = 0x0c;
inline constexpr uint8_t DW_EH_PE_pcrel = 0x10;
inline constexpr uint8_t DW_EH_PE_textrel = 0x20;
inline constexpr uint8_t DW_EH_PE_datarel = 0x30;
inline constexpr uint8_t DW_EH_PE_funcrel = 0x40;
inline constexpr uint8_t DW_EH_PE_aligned = 0x50;
inline constexpr uint8_t DW_EH_PE_indirect = 0x80;
inline constexpr uint8_t DW_EH_PE_omit = 0xff;

}  // namespace inprof::internal

#endif  // INPROF_LIB_DWARF_DWARF_CONSTANTS_H_
