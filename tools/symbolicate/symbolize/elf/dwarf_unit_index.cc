#include "symbolize/elf/dwarf_unit_index.h"

#include <dwarf.h>

#include <cstddef>
#include <utility>

namespace inprof::symbolicate {
namespace {

// The attributes that place a function's or an inlined call's code, gathered in one pass.
struct CodeAttributes {
  Dwarf_Attribute low{}, high{};  // form 0: absent
  bool has_ranges = false;
};

int note_code_attribute(Dwarf_Attribute* attribute, void* arg) {
  auto* code = static_cast<CodeAttributes*>(arg);
  // The first of each, as dwarf_attr finds it.
  switch (dwarf_whatattr(attribute)) {
    case DW_AT_low_pc:
      if (!code->low.form) code->low = *attribute;
      break;
    case DW_AT_high_pc:
      if (!code->high.form) code->high = *attribute;
      break;
    case DW_AT_ranges:
      code->has_ranges = true;
      break;
    default:
      break;
  }
  return DWARF_CB_OK;
}

// DW_AT_high_pc is an address in these forms, an offset from DW_AT_low_pc in the others.
bool is_address_form(unsigned form) {
  switch (form) {
    case DW_FORM_addr:
    case DW_FORM_addrx:
    case DW_FORM_addrx1:
    case DW_FORM_addrx2:
    case DW_FORM_addrx3:
    case DW_FORM_addrx4:
    case DW_FORM_GNU_addr_index:
      return true;
    default:
      return false;
  }
}

}  // namespace

void DwarfUnitIndex::build(Dwarf_Die* cudie, bool whole) {
  cu = *cudie;
  collect(cudie, 0, 0, whole);
  group(0);
}

bool DwarfUnitIndex::expand(uint32_t node, Dwarf* dwarf) {
  nodes[node].expanded = true;
  Dwarf_Die die;
  if (!dwarf_offdie(dwarf, nodes[node].die, &die)) return true;
  const size_t from = ranges.size();
  collect(&die, node, nodes[node].depth + 1, true);
  group(from);
  return true;
}

void DwarfUnitIndex::collect(Dwarf_Die* parent, uint32_t parent_node, int depth, bool inside) {
  if (depth > kMaxScopeDepth) return;
  Dwarf_Die child;
  if (dwarf_child(parent, &child) != 0) return;
  do {
    int tag = dwarf_tag(&child);
    switch (tag) {
      case DW_TAG_subprogram:
      case DW_TAG_inlined_subroutine: {
        uint32_t node = static_cast<uint32_t>(nodes.size());
        bool any = false;
        uint64_t first = 0;
        auto add = [&](uint64_t start, uint64_t end) {
          if (end <= start) return;
          ranges.push_back({parent_node, start, end, node});
          if (!any) first = start;
          any = true;
        };
        // What dwarf_ranges and dwarf_lowpc would say, from one pass over the attributes
        // (each of their lookups scans them again: most of this walk's cost).
        CodeAttributes code;
        dwarf_getattrs(&child, note_code_attribute, &code, 0);
        Dwarf_Addr entry = 0, high = 0;
        Dwarf_Word size = 0;
        const bool has_entry = code.low.form && dwarf_formaddr(&code.low, &entry) == 0;
        bool single = false;
        if (has_entry && code.high.form) {
          if (is_address_form(code.high.form)) {
            single = dwarf_formaddr(&code.high, &high) == 0;
          } else if (dwarf_formudata(&code.high, &size) == 0) {
            high = entry + size;
            single = true;
          }
        }
        if (single) {
          add(entry, high);
        } else if (code.has_ranges) {
          Dwarf_Addr base, start, end;
          ptrdiff_t off = 0;
          int guard = 0;
          while ((off = dwarf_ranges(&child, off, &base, &start, &end)) > 0 && ++guard < 4096) {
            add(start, end);
          }
        }
        if (!any) break;  // a declaration or an abstract instance: no code here
        Node n;
        n.die = dwarf_dieoffset(&child);
        n.parent = parent_node;
        // Without DW_AT_low_pc, DWARF's entry is the first listed range's start: for a
        // function GCC split, its hot part, listed before the .cold part it placed lower.
        n.entry = has_entry ? entry : first;
        n.depth = static_cast<uint16_t>(depth);
        n.expanded = inside;
        nodes.push_back(std::move(n));
        if (inside) collect(&child, node, depth + 1, true);
        break;
      }
      case DW_TAG_lexical_block:
      case DW_TAG_namespace:
      case DW_TAG_class_type:
      case DW_TAG_structure_type:
      case DW_TAG_union_type:
      case DW_TAG_module:
        collect(&child, parent_node, depth + 1, inside);
        break;
      default:
        break;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

void DwarfScopeIndex::collect(Dwarf_Die* parent, const std::string& prefix, int depth) {
  if (depth > kMaxScopeDepth) return;
  Dwarf_Die child;
  if (dwarf_child(parent, &child) != 0) return;
  do {
    int tag = dwarf_tag(&child);
    switch (tag) {
      case DW_TAG_subprogram:
        if (!prefix.empty()) prefixes.emplace(dwarf_dieoffset(&child), prefix);
        break;
      case DW_TAG_namespace:
      case DW_TAG_class_type:
      case DW_TAG_structure_type:
      case DW_TAG_union_type:
      case DW_TAG_module: {
        const char* name = dwarf_diename(&child);
        std::string label = name                      ? name
                            : tag == DW_TAG_namespace ? "(anonymous namespace)"
                                                      : "{unnamed type}";
        collect(&child, prefix + label + "::", depth + 1);
        break;
      }
      default:
        break;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

}  // namespace inprof::symbolicate
