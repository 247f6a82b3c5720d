// Where our line-program reader (line_table.h) meets libdw: the sections it reads, found in a
// file libdw has opened, and the parameters of one compilation unit's program.
#pragma once

#include <elfutils/libdw.h>

#include <optional>

#include "symbolize/line_table.h"

namespace inprof::symbolicate {

// nullopt when the file has no .debug_line, is big-endian, or a section is still compressed
// (libdw inflates the sections it reads when it opens a file; any other is left to libdw).
std::optional<LineSections> line_sections_of(Dwarf* dwarf);

// The unit's DW_AT_stmt_list, DW_AT_comp_dir and address size; nullopt without a line program.
std::optional<LineTable::Options> line_options_of(Dwarf_Die* cudie, bool with_rows);

}  // namespace inprof::symbolicate
