// What symbolicate needs to know about a PE file before trusting it for a module of a Windows
// dump: its identity (the same bytes the profiler recorded, read by the same code:
// platform/windows/pe_image_windows.h), its preferred load address, and whether it carries DWARF
// (MinGW builds). Only regular disk files are opened.
#ifndef INPROF_TOOLS_SYMBOLICATE_WINDOWS_PE_FILE_H_
#define INPROF_TOOLS_SYMBOLICATE_WINDOWS_PE_FILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace inprof::symbolicate {

struct PeFileInfo {
  std::vector<uint8_t> identity;  // PDB debug id (GUID + age, 20 bytes) or PE code id (8 bytes)
  uint64_t image_base = 0;        // the preferred ImageBase: the addresses its debug info uses
  uint32_t image_size = 0;        // SizeOfImage
  bool has_dwarf = false;         // a .debug_info section (MinGW -g)
};

// Reads the facts above. nullopt, with the reason in `why`, for a missing or irregular file or
// one that is not a 64-bit PE image.
std::optional<PeFileInfo> inspect_pe_file(const std::string& path, std::string* why);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_WINDOWS_PE_FILE_H_
