#include "libdw_reference.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

namespace inprof::internal {

struct LibdwReference::State {
  int fd = -1;
  std::vector<uint8_t> image;
  Elf* elf = nullptr;
  Dwarf_CFI* cfi = nullptr;
};

namespace {

std::vector<ExprOp> convert(const Dwarf_Op* ops, size_t n) {
  std::vector<ExprOp> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = ExprOp{ops[i].atom, ops[i].number, ops[i].number2};
  return out;
}

bool cfa_slot(const Dwarf_Op* ops, size_t n, int32_t* offset) {
  if (n < 1 || ops[0].atom != DW_OP_call_frame_cfa) return false;
  if (n == 1) {
    *offset = 0;
    return true;
  }
  if (n == 2 && ops[1].atom == DW_OP_plus_uconst) {
    auto k = static_cast<int64_t>(ops[1].number);
    if (k < INT32_MIN || k > INT32_MAX) return false;
    *offset = static_cast<int32_t>(k);
    return true;
  }
  return false;
}

bool reduce_simple(Dwarf_Frame* frame, Dwarf_Op* cfa_ops, Dwarf_Op* ra_ops, size_t ra_count,
                   UnwindRule* rule) {
  const Dwarf_Op& c = cfa_ops[0];
  int cfa_register = -1;
  int64_t cfa_offset = 0;
  if (c.atom == DW_OP_bregx) {
    cfa_register = static_cast<int>(c.number);
    cfa_offset = static_cast<int64_t>(c.number2);
  } else if (c.atom >= DW_OP_breg0 && c.atom <= DW_OP_breg31) {
    cfa_register = c.atom - DW_OP_breg0;
    cfa_offset = static_cast<int64_t>(c.number);
  }
  Dwarf_Op fp_mem[3];
  Dwarf_Op* fp_ops = nullptr;
  size_t fp_count = 0;
  int32_t ra_offset = 0, fp_offset = 0;
  const bool ra_in_lr = kHasLinkRegister && ra_count == 0 && ra_ops == nullptr;
  if (!((cfa_register == kRegSp || cfa_register == kRegFp) && cfa_offset >= INT32_MIN &&
        cfa_offset <= INT32_MAX &&
        (ra_in_lr || (ra_ops != nullptr && cfa_slot(ra_ops, ra_count, &ra_offset))) &&
        dwarf_frame_register(frame, kRegFp, fp_mem, &fp_ops, &fp_count) == 0)) {
    return false;
  }
  const bool fp_same = fp_count == 0 && fp_ops == nullptr;
  const bool fp_in_slot = fp_ops != nullptr && cfa_slot(fp_ops, fp_count, &fp_offset);
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

UnwindRule reduce(Dwarf_Frame* frame, std::vector<ExpressionRule>* expressions) {
  UnwindRule rule;
  bool signal_frame = false;
  const int ra_register = dwarf_frame_info(frame, nullptr, nullptr, &signal_frame);
  rule.signal_frame = signal_frame;
  if (ra_register < 0 || ra_register >= kRegisterCount) return rule;
  Dwarf_Op* cfa_ops = nullptr;
  size_t cfa_count = 0;
  if (dwarf_frame_cfa(frame, &cfa_ops, &cfa_count) != 0 || cfa_count == 0) return rule;
  Dwarf_Op ra_mem[3];
  Dwarf_Op* ra_ops = nullptr;
  size_t ra_count = 0;
  if (dwarf_frame_register(frame, ra_register, ra_mem, &ra_ops, &ra_count) != 0) return rule;
  if (ra_count == 0 && ra_ops != nullptr) {
    rule.kind = RuleKind::kEndOfStack;
    return rule;
  }
  if (!signal_frame && ra_register == kRegReturnAddress && cfa_count == 1 &&
      reduce_simple(frame, cfa_ops, ra_ops, ra_count, &rule)) {
    return rule;
  }
  ExpressionRule full;
  full.cfa = convert(cfa_ops, cfa_count);
  full.return_address_register = ra_register;
  full.signal_frame = signal_frame;
  for (int r = 0; r < kRegisterCount; ++r) {
    Dwarf_Op mem[3];
    Dwarf_Op* ops = nullptr;
    size_t n = 0;
    RegisterRule& rr = full.registers[r];
    if (dwarf_frame_register(frame, r, mem, &ops, &n) != 0) {
      rr.kind = RegisterRule::Kind::kUndefined;
    } else if (n == 0) {
      rr.kind = ops == nullptr ? RegisterRule::Kind::kSame : RegisterRule::Kind::kUndefined;
    } else if (ops[n - 1].atom == DW_OP_stack_value) {
      rr.kind = RegisterRule::Kind::kValue;
      rr.ops = convert(ops, n - 1);
    } else {
      rr.kind = RegisterRule::Kind::kAddress;
      rr.ops = convert(ops, n);
    }
  }
  rule.kind = RuleKind::kExpression;
  rule.expression_index = static_cast<uint32_t>(expressions->size());
  expressions->push_back(std::move(full));
  return rule;
}

}  // namespace

LibdwReference::LibdwReference() : state_(new State) { elf_version(EV_CURRENT); }

LibdwReference::~LibdwReference() {
  if (state_->cfi) dwarf_cfi_end(state_->cfi);
  if (state_->elf) elf_end(state_->elf);
  if (state_->fd >= 0) close(state_->fd);
  delete state_;
}

bool LibdwReference::open_file(const std::string& path) {
  state_->fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (state_->fd < 0) return false;
  state_->elf = elf_begin(state_->fd, ELF_C_READ_MMAP, nullptr);
  if (state_->elf) state_->cfi = dwarf_getcfi_elf(state_->elf);
  return state_->cfi != nullptr;
}

bool LibdwReference::open_memory(std::span<const uint8_t> image) {
  state_->image.assign(image.begin(), image.end());
  state_->elf = elf_memory(reinterpret_cast<char*>(state_->image.data()), state_->image.size());
  if (state_->elf) state_->cfi = dwarf_getcfi_elf(state_->elf);
  return state_->cfi != nullptr;
}

UnwindRule LibdwReference::rule(uint64_t elf_address, std::vector<ExpressionRule>* expressions) {
  Dwarf_Frame* frame = nullptr;
  if (dwarf_cfi_addrframe(state_->cfi, elf_address, &frame) != 0) return {};
  UnwindRule r = reduce(frame, expressions);
  std::free(frame);
  return r;
}

}  // namespace inprof::internal
