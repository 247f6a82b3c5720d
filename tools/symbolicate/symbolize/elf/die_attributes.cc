#include "symbolize/elf/die_attributes.h"

#include <dwarf.h>

#include <utility>

#include "symbolize/demangle.h"

namespace inprof::symbolicate {
namespace {

struct OneDie {
  Dwarf_Attribute linkage{}, mips_linkage{}, decl_file{}, decl_line{}, origin{}, specification{};
  bool has_name = false;
};

int note_function_attribute(Dwarf_Attribute* attribute, void* arg) {
  auto* d = static_cast<OneDie*>(arg);
  Dwarf_Attribute* slot = nullptr;
  switch (dwarf_whatattr(attribute)) {
    case DW_AT_linkage_name:
      slot = &d->linkage;
      break;
    case DW_AT_MIPS_linkage_name:
      slot = &d->mips_linkage;
      break;
    case DW_AT_decl_file:
      slot = &d->decl_file;
      break;
    case DW_AT_decl_line:
      slot = &d->decl_line;
      break;
    case DW_AT_abstract_origin:
      slot = &d->origin;
      break;
    case DW_AT_specification:
      slot = &d->specification;
      break;
    case DW_AT_name:
      d->has_name = true;
      break;
    default:
      break;
  }
  if (slot && !slot->form) *slot = *attribute;  // the first, as dwarf_attr finds it
  return DWARF_CB_OK;
}

}  // namespace

FunctionAttributes function_attributes(Dwarf_Die* die) {
  FunctionAttributes out;
  Dwarf_Die current = *die;
  for (int hop = 0; hop < 9; ++hop) {  // dwarf_attr_integrate's limit
    OneDie d;
    if (dwarf_getattrs(&current, note_function_attribute, &d, 0) != 1) break;
    for (auto [have, found] : {std::pair{&out.linkage, &d.linkage},
                               {&out.mips_linkage, &d.mips_linkage},
                               {&out.decl_file, &d.decl_file},
                               {&out.decl_line, &d.decl_line}}) {
      if (!have->form) *have = *found;
    }
    if (!out.named && d.has_name) out.named = current;
    Dwarf_Attribute* next = d.origin.form          ? &d.origin
                            : d.specification.form ? &d.specification
                                                   : nullptr;
    Dwarf_Die target;
    if (!next || !dwarf_formref_die(next, &target)) break;
    current = target;
  }
  return out;
}

std::string linkage_name(FunctionAttributes& attributes) {
  const char* linkage = dwarf_formstring(attributes.linkage.form ? &attributes.linkage : nullptr);
  if (!linkage) {
    linkage = dwarf_formstring(attributes.mips_linkage.form ? &attributes.mips_linkage : nullptr);
  }
  // Only a mangled name says more than DW_AT_name; a C function's linkage name is an asm label
  // (glibc's "__GI_memcpy" for memcpy), not what its source calls it.
  if (!linkage || linkage[0] != '_' || (linkage[1] != 'Z' && linkage[1] != 'R')) return {};
  return demangle(linkage);
}

uint32_t udata_attr(Dwarf_Die* die, unsigned name) {
  Dwarf_Attribute attr;
  Dwarf_Word value;
  if (dwarf_formudata(dwarf_attr(die, name, &attr), &value) != 0) return 0;
  return value > UINT32_MAX ? 0 : static_cast<uint32_t>(value);
}

// libdw's way (it decodes the unit's whole line program for its file table).
std::string libdw_call_file(Dwarf_Die* cudie, Dwarf_Die* inlined) {
  Dwarf_Attribute attr;
  Dwarf_Word index;
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &index) != 0) return {};
  Dwarf_Files* files;
  size_t count;
  if (dwarf_getsrcfiles(cudie, &files, &count) != 0 || index >= count) return {};
  const char* name = dwarf_filesrc(files, index, nullptr, nullptr);
  return name ? name : "";
}

}  // namespace inprof::symbolicate
