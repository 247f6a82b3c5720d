#include "unwind/dwarf/cfa_program.h"

#include "unwind/dwarf/dwarf_constants.h"

namespace inprof::internal {
namespace {

// GCC nests remember_state one or two deep; a deeper program is treated as malformed.
constexpr int kMaxRememberDepth = 8;

// value * factor, wrapping (malformed input must not reach signed overflow).
int64_t factored(uint64_t value, int64_t factor) {
  return static_cast<int64_t>(value * static_cast<uint64_t>(factor));
}

// What the CFI leaves unsaid: the CFA is the caller's SP, callee-saved registers keep their
// values, everything else is lost.
void set_defaults(CfiRow* row) {
  *row = CfiRow{};
  for (int r : kCfiDefaultSameValue) row->registers[r].kind = CfiRegister::Kind::kSameValue;
  row->registers[kRegSp].kind = CfiRegister::Kind::kValOffset;
}

class CfaMachine {
 public:
  CfaMachine(const MemoryView& view, const CieInfo& cie, const PointerBases& bases)
      : view_(view), cie_(cie), bases_(bases) {
    set_defaults(&row_);
    row_.return_address_register = cie.return_address_register;
    row_.signal_frame = cie.signal_frame;
    initial_ = row_;
  }

  // Runs [begin, end) from location `loc`, stopping where the location passes `pc`.
  bool run(uint64_t begin, uint64_t end, uint64_t loc, uint64_t pc) {
    MemoryReader reader(view_, begin, end);
    loc_ = loc;
    pc_ = pc;
    stopped_ = false;
    while (!reader.at_end() && !stopped_) {
      uint8_t opcode;
      if (!reader.u8(&opcode) || !step(reader, opcode)) return false;
    }
    return reader.ok();
  }

  void finish_cie() { initial_ = row_; }
  const CfiRow& row() const { return row_; }

 private:
  void advance(uint64_t delta) {
    const uint64_t next = loc_ + delta * cie_.code_alignment;
    if (next < loc_ || next > pc_) {
      stopped_ = true;  // the row so far covers pc
      return;
    }
    loc_ = next;
  }

  void set(uint64_t reg, CfiRegister::Kind kind, int64_t value, uint64_t length = 0) {
    if (reg < static_cast<uint64_t>(kRegisterCount)) row_.registers[reg] = {kind, value, length};
  }

  bool step(MemoryReader& r, uint8_t opcode);
  bool step_register(MemoryReader& r, uint8_t opcode);
  bool step_cfa(MemoryReader& r, uint8_t opcode);

  const MemoryView& view_;
  const CieInfo& cie_;
  const PointerBases& bases_;
  CfiRow row_;
  CfiRow initial_;  // the CIE's row, which DW_CFA_restore returns to
  CfiRow remembered_[kMaxRememberDepth];
  int depth_ = 0;
  uint64_t loc_ = 0;
  uint64_t pc_ = 0;
  bool stopped_ = false;
};

bool CfaMachine::step(MemoryReader& r, uint8_t opcode) {
  uint64_t reg, offset;
  switch (opcode & 0xc0) {
    case DW_CFA_advance_loc:
      advance(opcode & 0x3f);
      return true;
    case DW_CFA_offset:
      if (!r.uleb(&offset)) return false;
      set(opcode & 0x3f, CfiRegister::Kind::kOffset, factored(offset, cie_.data_alignment));
      return true;
    case DW_CFA_restore:
      reg = opcode & 0x3f;
      if (reg < static_cast<uint64_t>(kRegisterCount))
        row_.registers[reg] = initial_.registers[reg];
      return true;
  }
  switch (opcode) {
    case DW_CFA_nop:
    case DW_CFA_GNU_window_save:  // aarch64's negate_ra_state: return addresses are stripped
      return true;
    case DW_CFA_set_loc: {
      uint64_t target;
      if (!read_encoded_pointer(r, cie_.fde_encoding, bases_, &target) || target < loc_) {
        return false;
      }
      if (target > pc_) stopped_ = true;
      loc_ = target;
      return true;
    }
    case DW_CFA_advance_loc1: {
      uint8_t delta;
      if (!r.u8(&delta)) return false;
      advance(delta);
      return true;
    }
    case DW_CFA_advance_loc2: {
      uint16_t delta;
      if (!r.u16(&delta)) return false;
      advance(delta);
      return true;
    }
    case DW_CFA_advance_loc4: {
      uint32_t delta;
      if (!r.u32(&delta)) return false;
      advance(delta);
      return true;
    }
    case DW_CFA_remember_state:
      if (depth_ == kMaxRememberDepth) return false;
      remembered_[depth_++] = row_;
      return true;
    case DW_CFA_restore_state:
      if (depth_ == 0) return false;
      row_ = remembered_[--depth_];  // registers and CFA, as GCC's unwinder restores them
      return true;
    case DW_CFA_GNU_args_size:
      return r.uleb(&offset);
    default:
      return step_cfa(r, opcode);
  }
}

bool CfaMachine::step_cfa(MemoryReader& r, uint8_t opcode) {
  uint64_t reg, offset, length;
  int64_t soffset;
  switch (opcode) {
    case DW_CFA_def_cfa:
      if (!r.uleb(&reg) || !r.uleb(&offset)) return false;
      row_.cfa_is_expression = false;
      row_.cfa_register = reg;
      row_.cfa_offset = static_cast<int64_t>(offset);
      return true;
    case DW_CFA_def_cfa_sf:
      if (!r.uleb(&reg) || !r.sleb(&soffset)) return false;
      row_.cfa_is_expression = false;
      row_.cfa_register = reg;
      row_.cfa_offset = factored(static_cast<uint64_t>(soffset), cie_.data_alignment);
      return true;
    case DW_CFA_def_cfa_register:
      if (!r.uleb(&reg) || row_.cfa_is_expression) return false;
      row_.cfa_register = reg;
      return true;
    case DW_CFA_def_cfa_offset:
      if (!r.uleb(&offset) || row_.cfa_is_expression) return false;
      row_.cfa_offset = static_cast<int64_t>(offset);
      return true;
    case DW_CFA_def_cfa_offset_sf:
      if (!r.sleb(&soffset) || row_.cfa_is_expression) return false;
      row_.cfa_offset = factored(static_cast<uint64_t>(soffset), cie_.data_alignment);
      return true;
    case DW_CFA_def_cfa_expression:
      if (!r.uleb(&length)) return false;
      row_.cfa_is_expression = true;
      row_.cfa_expression = r.position();
      row_.cfa_expression_length = length;
      return r.skip(length);
    default:
      return step_register(r, opcode);
  }
}

bool CfaMachine::step_register(MemoryReader& r, uint8_t opcode) {
  using Kind = CfiRegister::Kind;
  uint64_t reg, value;
  int64_t svalue;
  switch (opcode) {
    case DW_CFA_offset_extended:
    case DW_CFA_val_offset:
      if (!r.uleb(&reg) || !r.uleb(&value)) return false;
      set(reg, opcode == DW_CFA_offset_extended ? Kind::kOffset : Kind::kValOffset,
          factored(value, cie_.data_alignment));
      return true;
    case DW_CFA_offset_extended_sf:
    case DW_CFA_val_offset_sf:
      if (!r.uleb(&reg) || !r.sleb(&svalue)) return false;
      set(reg, opcode == DW_CFA_offset_extended_sf ? Kind::kOffset : Kind::kValOffset,
          factored(static_cast<uint64_t>(svalue), cie_.data_alignment));
      return true;
    case DW_CFA_GNU_negative_offset_extended:
      if (!r.uleb(&reg) || !r.uleb(&value)) return false;
      set(reg, Kind::kOffset, factored(0 - value, cie_.data_alignment));
      return true;
    case DW_CFA_restore_extended:
      if (!r.uleb(&reg)) return false;
      if (reg < static_cast<uint64_t>(kRegisterCount))
        row_.registers[reg] = initial_.registers[reg];
      return true;
    case DW_CFA_undefined:
    case DW_CFA_same_value:
      if (!r.uleb(&reg)) return false;
      set(reg, opcode == DW_CFA_undefined ? Kind::kUndefined : Kind::kSameValue, 0);
      return true;
    case DW_CFA_register:
      if (!r.uleb(&reg) || !r.uleb(&value)) return false;
      set(reg, Kind::kRegister, static_cast<int64_t>(value));
      return true;
    case DW_CFA_expression:
    case DW_CFA_val_expression: {
      uint64_t length;
      if (!r.uleb(&reg) || !r.uleb(&length)) return false;
      set(reg, opcode == DW_CFA_expression ? Kind::kExpression : Kind::kValExpression,
          static_cast<int64_t>(r.position()), length);
      return r.skip(length);
    }
    default:
      return false;  // an instruction we do not know: its operands cannot be skipped
  }
}

}  // namespace

bool run_cfa_program(const MemoryView& view, const CieInfo& cie, const FdeInfo& fde,
                     const PointerBases& bases, uint64_t pc, CfiRow* row) {
  if (pc < fde.pc_begin || pc >= fde.pc_end) return false;
  PointerBases fde_bases = bases;
  fde_bases.function = fde.pc_begin;
  // The CIE's instructions hold for the whole FDE: no location of theirs stops them.
  CfaMachine machine(view, cie, fde_bases);
  if (!machine.run(cie.instructions, cie.instructions_end, 0, UINT64_MAX)) return false;
  machine.finish_cie();
  if (!machine.run(fde.instructions, fde.instructions_end, fde.pc_begin, pc)) return false;
  *row = machine.row();
  return true;
}

}  // namespace inprof::internal
