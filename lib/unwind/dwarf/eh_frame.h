// The unwind tables of a loaded module as the loader maps them: .eh_frame_hdr (found through the
// PT_GNU_EH_FRAME program header) and the .eh_frame it indexes, both read through a MemoryView,
// in the format the LSB specifies (Core specification, "Exception Frames"). No file, no OS call:
// the same code parses a live module and a test's buffers.
//
// Lookup: a binary search of the header's sorted table, or a linear walk of .eh_frame when there
// is no table or it uses an encoding we do not search. Then the FDE's and its CIE's instructions
// run up to the address. Every read is bounds-checked; malformed tables give no row.
#ifndef INPROF_LIB_DWARF_EH_FRAME_H_
#define INPROF_LIB_DWARF_EH_FRAME_H_

#include <cstdint>
#include <optional>

#include "unwind/dwarf/cfa_program.h"
#include "unwind/dwarf/cfi_row.h"
#include "unwind/dwarf/eh_pointer.h"
#include "unwind/dwarf/memory_view.h"

namespace inprof::internal {

struct EhFrameSections {
  uint64_t hdr = 0;       // .eh_frame_hdr, 0 if there is none
  uint64_t hdr_size = 0;  // its size (PT_GNU_EH_FRAME's p_memsz): bounds the table
  uint64_t eh_frame = 0;  // .eh_frame; 0: where the header's eh_frame_ptr says
  // A linear walk of .eh_frame stops here at the latest (else at its zero terminator, or where
  // the view ends).
  uint64_t eh_frame_end = UINT64_MAX;
  PointerBases bases;  // for FDEs that use textrel/datarel encodings (none on x86-64/aarch64)
};

// The row of the CFI table that covers `pc`, if the tables have one.
std::optional<CfiRow> find_cfi_row(const MemoryView& view, const EhFrameSections& sections,
                                   uint64_t pc);

// Parses the CIE at `address`.
bool parse_cie(const MemoryView& view, uint64_t address, CieInfo* cie);
// Parses the FDE at `address` and its CIE; false for a CIE, a terminator or malformed input.
bool parse_fde(const MemoryView& view, uint64_t address, const PointerBases& bases, FdeInfo* fde,
               CieInfo* cie);

}  // namespace inprof::internal

#endif  // INPROF_LIB_DWARF_EH_FRAME_H_
