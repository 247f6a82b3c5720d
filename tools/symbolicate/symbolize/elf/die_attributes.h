// What the DWARF reader (dwarf_symbolizer.h) reads of a function's DIE to name and place it:
// the attributes that describe it, gathered through the DIEs it completes in one pass each, and
// the file of an inlined call as libdw names it.
#ifndef INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_ELF_DIE_ATTRIBUTES_H_
#define INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_ELF_DIE_ATTRIBUTES_H_

#include <elfutils/libdw.h>

#include <cstdint>
#include <optional>
#include <string>

namespace inprof::symbolicate {

// What describes a function: its DIE's own attributes first, then those of the DIEs it completes
// (DW_AT_abstract_origin, else DW_AT_specification), as dwarf_attr_integrate looks them up, but
// in one pass over each DIE's attributes instead of one per attribute and DIE.
struct FunctionAttributes {
  Dwarf_Attribute linkage{}, mips_linkage{}, decl_file{}, decl_line{};  // form 0: absent
  std::optional<Dwarf_Die> named;  // the first DIE of the chain with a DW_AT_name
};

FunctionAttributes function_attributes(Dwarf_Die* die);

// The demangled DW_AT_linkage_name (or DW_AT_MIPS_linkage_name) when it is a mangled name;
// empty otherwise.
std::string linkage_name(FunctionAttributes& attributes);

// The unsigned attribute `name` of `die`; 0 when absent or over 32 bits.
uint32_t udata_attr(Dwarf_Die* die, unsigned name);

// The file of the inlined call `inlined` (DW_AT_call_file) in the unit `cudie`, libdw's way (it
// decodes the unit's whole line program for its file table).
std::string libdw_call_file(Dwarf_Die* cudie, Dwarf_Die* inlined);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_ELF_DIE_ATTRIBUTES_H_
