// The ModuleSymbolizer of a Mach-O module (a macOS dump's binaries and dylibs): function names
// from the LC_SYMTAB of the binary (or, without it, of its .dSYM's DWARF file), Mach-O's
// leading underscore stripped and C++ demangled, with the file and line from the .dSYM's line
// programs (macho_lines.h) when one was found. An address outside every function symbol gets
// nothing, so it stays module+offset. elfutils' libdw reads ELF only: the rest of the .dSYM's
// DWARF (inline frames, declaration lines) is not read.
#ifndef INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_MACHO_SYMBOLIZER_H_
#define INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_MACHO_SYMBOLIZER_H_

#include <memory>
#include <string>

#include "symbolize/module_symbolizer.h"

namespace inprof::symbolicate {

// Opens `files` (files.macho set by the locator). Null, with one line in `why`, if neither file
// can be read.
std::unique_ptr<ModuleSymbolizer> open_macho_symbolizer(const ModuleFiles& files, std::string* why);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_MACHO_SYMBOLIZER_H_
