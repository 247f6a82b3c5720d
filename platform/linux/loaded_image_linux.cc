#include "loaded_image_linux.h"

#include <elf.h>

#include <cstring>

#include "dump/dump_records.h"

namespace inprof::internal {

// The loader maps and unmaps libraries with calls of its own that ThreadSanitizer does not see,
// so it never forgets what we read of a library since unloaded: a read of its headers would be
// charged against whatever is loaded at that address later (a constructor's store, say). These
// reads happen under the loader's lock (dl_iterate_phdr holds it) and are not races.
// Aligned words a word at a time (program headers, .eh_frame tables are read often).
__attribute__((no_sanitize("thread"))) void read_image(void* dst, const void* src, size_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  auto address = reinterpret_cast<uintptr_t>(src);
  for (; n >= 8 && address % 8 == 0; n -= 8, address += 8, d += 8) {
    const uint64_t word = *reinterpret_cast<const volatile uint64_t*>(address);
    std::memcpy(d, &word, 8);
  }
  const auto* s = reinterpret_cast<const volatile uint8_t*>(address);
  for (size_t i = 0; i < n; ++i) d[i] = s[i];
}

ElfW(Phdr) program_header(const dl_phdr_info* info, int i) {
  ElfW(Phdr) ph;
  read_image(&ph, &info->dlpi_phdr[i], sizeof(ph));
  return ph;
}

// Returns the GNU build-id found in the module's PT_NOTE segments.
std::vector<uint8_t> find_build_id(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) ph = program_header(info, i);
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
    size_t left = ph.p_memsz;
    while (left >= sizeof(ElfW(Nhdr))) {
      ElfW(Nhdr) note;
      read_image(&note, p, sizeof(note));
      size_t name_size = (note.n_namesz + 3) & ~size_t(3);
      size_t desc_size = (note.n_descsz + 3) & ~size_t(3);
      size_t total = sizeof(note) + name_size + desc_size;
      if (total > left) break;
      const uint8_t* name = p + sizeof(note);
      char owner[4] = {};
      if (note.n_namesz == 4) read_image(owner, name, sizeof(owner));
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 &&
          std::memcmp(owner, "GNU", 4) == 0 && note.n_descsz <= kMaxBuildIdSize) {
        std::vector<uint8_t> id(note.n_descsz);
        read_image(id.data(), name + name_size, id.size());
        return id;
      }
      p += total;
      left -= total;
    }
  }
  return {};
}

}  // namespace inprof::internal
