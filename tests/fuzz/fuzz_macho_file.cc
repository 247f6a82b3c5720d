// libFuzzer target: a Mach-O file (thin or fat) as symbolicate reads a macOS module's binary or
// .dSYM (macho_file.h), for either architecture. A file that is read must keep the promises
// lookups rely on: symbols sorted by address, each ending after it starts and no later than the
// next one starts, and symbol_at answering only inside a symbol.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "symbolize/macho/macho_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using inprof::symbolicate::MachOFile;
  for (const char* arch : {"x86_64", "aarch64", ""}) {
    std::string why;
    std::optional<MachOFile> file =
        inprof::symbolicate::parse_macho(std::span<const uint8_t>(data, size), arch, &why);
    if (!file) {
      if (why.empty() || why.find('\n') != std::string::npos) std::abort();
      continue;
    }
    if (file->slice_offset > size || file->slice_size > size - file->slice_offset) std::abort();
    for (size_t i = 0; i < file->symbols.size(); ++i) {
      const auto& s = file->symbols[i];
      if (s.end <= s.addr || s.name.empty()) std::abort();
      if (i + 1 < file->symbols.size() &&
          (file->symbols[i + 1].addr <= s.addr || s.end > file->symbols[i + 1].addr)) {
        std::abort();
      }
      const auto* hit = file->symbol_at(s.addr);
      if (hit != &s || file->symbol_at(s.end - 1) != &s) std::abort();
    }
  }
  return 0;
}
