// Source lines of a Mach-O module from its .dSYM's DWARF: the line programs of the
// __DWARF,__debug_line section, decoded by the project's own line-table reader (line_table.h),
// since elfutils' libdw opens ELF files only. Compilation units are not read (no
// .debug_info): every line program is decoded and the one covering an address answers, and the
// file names of DWARF 4 programs stay relative to their unit's directory.
#ifndef INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_MACHO_LINES_H_
#define INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_MACHO_LINES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "symbolize/line_table.h"
#include "symbolize/macho/macho_file.h"

namespace inprof::symbolicate {

class MachOLines {
 public:
  // The line programs of `dsym` (read from `path`). nullopt, with one line in `why`, if it has no
  // __debug_line or none of its programs can be decoded.
  static std::optional<MachOLines> read(const std::string& path, const MachOFile& dsym,
                                        std::string* why);

  struct Line {
    std::string file;
    uint32_t line = 0;
  };
  // The line executing at `vaddr`; nullopt outside every program's sequences.
  std::optional<Line> find(uint64_t vaddr) const;

 private:
  std::vector<uint8_t> line_, line_str_, str_;
  std::vector<LineTable> tables_;
};

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_MACHO_LINES_H_
