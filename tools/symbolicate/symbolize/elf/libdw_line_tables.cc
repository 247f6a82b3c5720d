#include "symbolize/elf/libdw_line_tables.h"

#include <dwarf.h>
#include <gelf.h>

#include <cstring>

namespace inprof::symbolicate {

std::optional<LineSections> line_sections_of(Dwarf* dwarf) {
  Elf* elf = dwarf ? dwarf_getelf(dwarf) : nullptr;
  size_t shstrndx = 0;
  const char* ident = elf ? elf_getident(elf, nullptr) : nullptr;
  if (!ident || ident[EI_DATA] != ELFDATA2LSB || elf_getshdrstrndx(elf, &shstrndx) != 0) {
    return std::nullopt;
  }
  LineSections found;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr)) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (!name) continue;
    std::span<const uint8_t>* target = nullptr;
    if (std::strcmp(name, ".debug_line") == 0) target = &found.line;
    if (std::strcmp(name, ".debug_line_str") == 0) target = &found.line_str;
    if (std::strcmp(name, ".debug_str") == 0) target = &found.str;
    if (!target) continue;
    if (shdr.sh_flags & SHF_COMPRESSED) return std::nullopt;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data || !data->d_buf) continue;
    *target = {static_cast<const uint8_t*>(data->d_buf), data->d_size};
  }
  if (found.line.empty()) return std::nullopt;
  return found;
}

std::optional<LineTable::Options> line_options_of(Dwarf_Die* cudie, bool with_rows) {
  Dwarf_Attribute attr;
  Dwarf_Word offset;
  if (dwarf_formudata(dwarf_attr(cudie, DW_AT_stmt_list, &attr), &offset) != 0) {
    return std::nullopt;
  }
  LineTable::Options options;
  options.offset = offset;
  options.comp_dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
  uint8_t address_size = 0;
  Dwarf_Die unit;
  if (dwarf_diecu(cudie, &unit, &address_size, nullptr) && address_size) {
    options.unit_address_size = address_size;
  }
  options.with_rows = with_rows;
  return options;
}

}  // namespace inprof::symbolicate
