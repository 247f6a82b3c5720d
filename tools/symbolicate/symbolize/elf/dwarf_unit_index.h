// The DWARF reader's view of one compilation unit (dwarf_symbolizer.h): its functions and
// inlined calls as a tree whose chain at an address is its inline chain (unit_tree.h), and the
// namespaces and classes that qualify its functions' names. Both read from libdw.
#ifndef INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_ELF_DWARF_UNIT_INDEX_H_
#define INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_ELF_DWARF_UNIT_INDEX_H_

#include <elfutils/libdw.h>

#include <cstdint>
#include <string>
#include <unordered_map>

#include "symbolize/unit_tree.h"

namespace inprof::symbolicate {

// One compilation unit's functions as a tree (unit_tree.h), read from libdw. A function's inside
// (its inlined calls, nested blocks) is read the first time an address falls in it: a profile
// touches few of a big unit's functions, and walking every DIE of the unit was most of the cost.
struct DwarfUnitIndex : UnitTree {
  Dwarf_Die cu{};
  void build(Dwarf_Die* cudie, bool whole = false);

  // Reads the inside of the function at `node`.
  bool expand(uint32_t node, Dwarf* dwarf);

  // Adds the functions and inlined calls under `parent`; with `inside`, also what is inside
  // them, else they are left to expand().
  void collect(Dwarf_Die* parent, uint32_t parent_node, int depth, bool inside);
};

// The enclosing namespaces and classes ("ns::Class::") of the subprogram DIEs of one unit that
// have any, found in one walk: names then need no search of the unit from its top (LTO builds
// refer to functions declared in other, large units all the time).
struct DwarfScopeIndex {
  std::unordered_map<Dwarf_Off, std::string> prefixes;

  void collect(Dwarf_Die* parent, const std::string& prefix, int depth);
};

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_ELF_DWARF_UNIT_INDEX_H_
