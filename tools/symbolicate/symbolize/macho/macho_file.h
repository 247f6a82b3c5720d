// A Mach-O file (macOS binary, dylib or a .dSYM's DWARF file) as symbolicate reads it: the slice
// for the dump's architecture (of a fat/universal file), its LC_UUID, its sections and the
// function symbols of its LC_SYMTAB. The file is untrusted: every read is bounded, and a
// truncated or corrupt file gives one line saying what is wrong, never a crash.
#ifndef INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_MACHO_FILE_H_
#define INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_MACHO_FILE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace inprof::symbolicate {

struct MachOSection {
  std::string segment;  // "__TEXT", "__DWARF"
  std::string name;     // "__text", "__debug_line"
  uint64_t addr = 0;
  uint64_t size = 0;
  uint64_t file_offset = 0;  // from the start of the slice; 0 for zero-fill sections
  bool code = false;         // S_ATTR_PURE_INSTRUCTIONS or S_ATTR_SOME_INSTRUCTIONS
};

// A function symbol: defined in a code section (N_SECT), not a debugging (stab) entry.
struct MachOSymbol {
  uint64_t addr = 0;
  uint64_t end = 0;  // the next symbol's address, or the end of its section
  bool external = false;
  std::string name;  // as stored: with Mach-O's leading underscore
};

struct MachOFile {
  std::string arch;                           // "x86_64" or "aarch64" (the dump's names)
  std::string uuid;                           // LC_UUID, lowercase hex; empty if the file has none
  uint64_t slice_offset = 0, slice_size = 0;  // where the slice is in the file
  std::vector<MachOSection> sections;
  std::vector<MachOSymbol> symbols;  // by address, one per address (an external one preferred)
  bool has_dwarf() const;            // a __DWARF,__debug_info section with contents
  const MachOSection* section(std::string_view segment, std::string_view name) const;
  // The function symbol covering `addr`; null outside every one.
  const MachOSymbol* symbol_at(uint64_t addr) const;
};

// Whether `bytes` start like a Mach-O file: thin 64-bit (either byte order) or fat.
bool looks_like_macho(std::span<const uint8_t> bytes);

// Reads the slice for `arch` ("x86_64", "aarch64"; empty: a thin file's only slice, or a fat
// file's first) of the Mach-O file in `bytes`. nullopt, with one line in `why`, if it is not a
// usable 64-bit little-endian Mach-O file or has no slice for `arch`.
std::optional<MachOFile> parse_macho(std::span<const uint8_t> bytes, std::string_view arch,
                                     std::string* why);

// The same for the regular file at `path` (opened with open_regular_file).
std::optional<MachOFile> read_macho_file(const std::string& path, std::string_view arch,
                                         std::string* why);

// The contents of `section` of `file`, read from `path` (the file `file` was read from). False,
// with one line in `why`, for a zero-fill section, one outside the slice, or a read error.
bool read_macho_section(const std::string& path, const MachOFile& file, const MachOSection& section,
                        std::vector<uint8_t>* out, std::string* why);

// Whether the regular file at `path` starts like a Mach-O file.
bool is_macho_file(const std::string& path);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_MACHO_FILE_H_
