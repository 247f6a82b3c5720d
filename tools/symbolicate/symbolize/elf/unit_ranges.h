// Which compilation unit holds an address when .debug_aranges does not say: clang writes no
// .debug_aranges unless asked (-gdwarf-aranges), and libdw 0.188 (Debian 12) then has no address
// ranges at all, so libdwfl finds no unit for any address. The units' own DIEs still say where
// their code is (DW_AT_low_pc/high_pc, DW_AT_ranges), as llvm-symbolizer reads them.
#ifndef INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_ELF_UNIT_RANGES_H_
#define INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_ELF_UNIT_RANGES_H_

#include <elfutils/libdw.h>

#include <cstdint>
#include <vector>

namespace inprof::symbolicate {

struct UnitRange {
  uint64_t addr, end;  // [addr, end) in the debug information's addresses
  uint64_t unit;       // the unit's DIE offset
};

// The code ranges of the units .debug_aranges leaves out (all of them without the section), by
// address and not overlapping: where two units' ranges overlap, the one that starts first keeps
// the addresses (any fixed choice: only a linker's leftovers overlap).
std::vector<UnitRange> ranges_of_units_without_aranges(Dwarf* dwarf);

// The unit of `ranges` holding `pc`; 0 (no unit's DIE offset) if none.
uint64_t unit_holding(const std::vector<UnitRange>& ranges, uint64_t pc);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_ELF_UNIT_RANGES_H_
