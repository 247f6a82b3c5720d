// Executes the call frame instructions of a CIE and an FDE up to an address, giving that
// address's CfiRow. Malformed programs (unknown instructions, reads past their end, a
// restore_state without a remember_state, remember_state nested deeper than we keep) fail.
#ifndef INPROF_LIB_DWARF_CFA_PROGRAM_H_
#define INPROF_LIB_DWARF_CFA_PROGRAM_H_

#include <cstdint>

#include "unwind/dwarf/cfi_row.h"
#include "unwind/dwarf/eh_pointer.h"
#include "unwind/dwarf/memory_view.h"

namespace inprof::internal {

// What a CIE contributes: the factors, the return address column, how FDE pointers are
// encoded and its initial instructions [instructions, instructions_end).
struct CieInfo {
  uint64_t code_alignment = 1;
  int64_t data_alignment = 1;
  uint64_t return_address_register = 0;
  uint8_t fde_encoding = 0;  // DW_EH_PE_absptr
  bool augmented = false;    // "z": FDEs carry augmentation data to skip
  bool signal_frame = false;
  uint64_t instructions = 0;
  uint64_t instructions_end = 0;
};

struct FdeInfo {
  uint64_t pc_begin = 0;
  uint64_t pc_end = 0;
  uint64_t instructions = 0;
  uint64_t instructions_end = 0;
};

// The row that applies at `pc` (pc_begin <= pc < pc_end), starting from the architecture's
// defaults for registers the CFI never mentions.
bool run_cfa_program(const MemoryView& view, const CieInfo& cie, const FdeInfo& fde,
                     const PointerBases& bases, uint64_t pc, CfiRow* row);

}  // namespace inprof::internal

#endif  // INPROF_LIB_DWARF_CFA_PROGRAM_H_
