#include "symbolize/elf/cfi_slot.h"

#include <dwarf.h>

#include <cstdlib>
#include <utility>

#include "dump/dump_records.h"

namespace inprof::symbolicate {

std::optional<std::optional<unsigned>> cfi_return_slot(Dwarf_CFI* cfi, uint64_t pc, bool aarch64) {
  constexpr uint64_t kRsp = 7;
  constexpr uint64_t kAarch64Sp = 31;
  if (!cfi) return std::nullopt;
  Dwarf_Frame* frame = nullptr;
  if (dwarf_cfi_addrframe(cfi, pc, &frame) != 0) return std::nullopt;
  Dwarf_Op* ops = nullptr;
  size_t nops = 0;
  std::optional<unsigned> slot;
  if (dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops == 1) {
    uint64_t reg = ~0ull;
    int64_t off = 0;
    if (ops[0].atom == DW_OP_bregx) {
      reg = ops[0].number;
      off = static_cast<int64_t>(ops[0].number2);
    } else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
      reg = ops[0].atom - DW_OP_breg0;
      off = static_cast<int64_t>(ops[0].number);
    }
    if (aarch64) {
      if (reg == kAarch64Sp) slot = internal::kLeafCandidateLinkRegister;
    } else if (reg == kRsp && off >= 8 && off % 8 == 0 && (off - 8) / 8 < 255) {
      slot = static_cast<unsigned>((off - 8) / 8);
    }
  }
  std::free(frame);
  return std::optional<std::optional<unsigned>>(std::in_place, slot);
}

}  // namespace inprof::symbolicate
