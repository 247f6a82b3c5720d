// What symbolicate needs to know about an ELF file before trusting it for a module: its GNU
// build-id, whether it carries DWARF, and its .gnu_debuglink. Only regular files are opened, so a
// FIFO, a device or a directory named by a dump can neither block nor feed garbage.
#ifndef INPROF_TOOLS_SYMBOLICATE_ELF_FILE_H_
#define INPROF_TOOLS_SYMBOLICATE_ELF_FILE_H_

#include <cstdint>
#include <optional>
#include <string>

namespace inprof::symbolicate {

struct DebugLink {
  std::string file;  // a file name, no directory
  uint32_t crc = 0;  // CRC-32 of the whole debug file
};

struct ElfFileInfo {
  std::string build_id;    // lowercase hex; empty if the file has none
  bool has_dwarf = false;  // .debug_info with contents (not NOBITS)
  std::optional<DebugLink> debug_link;
};

// Opens `path` read-only if, and only if, it is a regular file (checked again on the open
// descriptor). Returns -1 with the reason in `why` otherwise.
int open_regular_file(const std::string& path, std::string* why);

// Reads the facts above. nullopt, with the reason in `why`, for a missing, irregular or non-ELF
// file.
std::optional<ElfFileInfo> inspect_elf_file(const std::string& path, std::string* why);

// CRC-32 (the .gnu_debuglink one: zlib's) of a whole file; nullopt if it cannot be read.
std::optional<uint32_t> file_crc32(const std::string& path);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_ELF_FILE_H_
