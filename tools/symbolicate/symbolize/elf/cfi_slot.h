// The leaf fix-up's CFI question (leaf_fixup.h) answered from one CFI table: where a function
// without a frame record keeps its return address at an address. Shared by the module's full
// reader (elf/dwarf_symbolizer.cc: .eh_frame, then the debug file's .debug_frame) and the
// binary's own (binary_code.h: .eh_frame alone), so that both answer alike.
#ifndef INPROF_TOOLS_SYMBOLICATE_CFI_SLOT_H_
#define INPROF_TOOLS_SYMBOLICATE_CFI_SLOT_H_

#include <elfutils/libdw.h>

#include <cstdint>
#include <optional>

namespace inprof::symbolicate {

// nullopt when `cfi` has no entry covering `pc` (its own address: the caller subtracts the
// table's bias); otherwise the answer of ModuleSymbolizer::return_address_slot, itself possibly
// nothing (the CFA is not stack-pointer based, or the table is damaged there).
std::optional<std::optional<unsigned>> cfi_return_slot(Dwarf_CFI* cfi, uint64_t pc, bool aarch64);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_CFI_SLOT_H_
