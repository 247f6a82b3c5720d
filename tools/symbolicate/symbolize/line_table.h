// One compilation unit's DWARF line number program (.debug_line, versions 2 to 5), decoded into
// one flat array of rows.
//
// Why not libdw's dwarf_getsrclines: it allocates every row on its own and sorts all of them,
// which was 40 % of symbolizing python3.11 (584 M of 1,465 M instructions). A linked program's
// sequences are already sorted runs; they only need ordering among themselves. Lookups and file
// names give exactly what libdw gives (dwarf_getsrc_die, dwarf_linesrc, dwarf_getsrcfiles): the
// tests compare every row of real programs with libdw's. Anything this reader does not know (a
// string form it cannot resolve, VLIW op indexes, big-endian data) makes parse() fail with the
// reason, and the caller asks libdw instead.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace inprof::symbolicate {

// The sections a line program reads, as libdw holds them (inflated).
struct LineSections {
  std::span<const uint8_t> line;      // .debug_line
  std::span<const uint8_t> line_str;  // .debug_line_str (DW_FORM_line_strp)
  std::span<const uint8_t> str;       // .debug_str (DW_FORM_strp)
};

class LineTable {
 public:
  struct Options {
    uint64_t offset = 0;             // the unit's DW_AT_stmt_list
    const char* comp_dir = nullptr;  // the unit's DW_AT_comp_dir (directory 0 before DWARF 5)
    uint8_t unit_address_size = 8;   // before DWARF 5 the header does not say
    bool with_rows = true;           // false: the file table only
  };

  // nullopt, with the reason in *why, when the program is malformed or uses what this reader
  // does not support.
  static std::optional<LineTable> parse(const LineSections& sections, const Options& options,
                                        std::string* why);

  // File names indexed as the program's file register (and DW_AT_decl_file, DW_AT_call_file)
  // index them: before DWARF 5 index 0 is libdw's "???".
  const std::vector<std::string>& files() const { return files_; }

  struct Location {
    uint32_t file;  // may be out of range of files(): no name
    int64_t line;
  };
  // The row in effect at `address`: the last row at the greatest row address <= `address` that
  // does not end a sequence; nullopt in a gap between sequences or outside them all.
  std::optional<Location> find(uint64_t address) const;

  size_t row_count() const { return rows_.size(); }

  struct Row {
    uint64_t address;
    int64_t line;
    uint32_t file;
    bool end_sequence;
  };
  const std::vector<Row>& rows() const { return rows_; }
  // A table as parse() made it, from its parts (tests compare other tables with it).
  // nullopt when the rows are not in address order.
  static std::optional<LineTable> from_parts(std::vector<std::string> files, std::vector<Row> rows);

 private:
  std::vector<std::string> files_;
  std::vector<Row> rows_;  // by address; see parse() for the order of rows at one address
};

}  // namespace inprof::symbolicate
