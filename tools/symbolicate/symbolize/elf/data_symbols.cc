#include "symbolize/elf/data_symbols.h"

#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>

#include "symbolize/demangle.h"
#include "symbolize/elf/elf_file.h"

namespace inprof::symbolicate {

DataSymbols DataSymbols::load(const std::vector<std::string>& paths) {
  DataSymbols out;
  for (const std::string& path : paths) {
    if (!path.empty()) out.read_file(path);
  }
  std::sort(out.objects_.begin(), out.objects_.end(), [](const Object& a, const Object& b) {
    return a.start != b.start ? a.start < b.start : a.name < b.name;
  });
  out.objects_.erase(std::unique(out.objects_.begin(), out.objects_.end(),
                                 [](const Object& a, const Object& b) {
                                   return a.start == b.start && a.size == b.size;
                                 }),
                     out.objects_.end());
  return out;
}

void DataSymbols::read_file(const std::string& path) {
  std::string why;
  const int fd = open_regular_file(path, &why);
  if (fd < 0) return;
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  // .symtab has every object; .dynsym only the exported ones, read where there is no .symtab.
  Elf_Scn* chosen = nullptr;
  for (Elf_Scn* scn = elf ? elf_nextscn(elf, nullptr) : nullptr; scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr header;
    if (!gelf_getshdr(scn, &header)) continue;
    if (header.sh_type == SHT_SYMTAB) chosen = scn;
    if (header.sh_type == SHT_DYNSYM && !chosen) chosen = scn;
  }
  GElf_Shdr header;
  Elf_Data* data = chosen && gelf_getshdr(chosen, &header) ? elf_getdata(chosen, nullptr) : nullptr;
  const size_t count = data && header.sh_entsize ? header.sh_size / header.sh_entsize : 0;
  for (size_t i = 1; i < count; ++i) {
    GElf_Sym sym;
    if (!gelf_getsym(data, static_cast<int>(i), &sym) || sym.st_size == 0 ||
        sym.st_shndx == SHN_UNDEF || GELF_ST_TYPE(sym.st_info) != STT_OBJECT) {
      continue;
    }
    const char* name = elf_strptr(elf, header.sh_link, sym.st_name);
    if (name && *name) objects_.push_back({sym.st_value, sym.st_size, name});
  }
  if (elf) elf_end(elf);
  close(fd);
}

std::optional<DataSymbols::Found> DataSymbols::find(uint64_t vaddr) const {
  auto it = std::upper_bound(objects_.begin(), objects_.end(), vaddr,
                             [](uint64_t v, const Object& o) { return v < o.start; });
  if (it == objects_.begin()) return std::nullopt;
  --it;
  if (vaddr - it->start >= it->size) return std::nullopt;
  return Found{demangle(it->name.c_str()), vaddr - it->start};
}

}  // namespace inprof::symbolicate
