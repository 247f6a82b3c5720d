// Readable names for mangled symbols: Itanium C++ (GCC, Clang, MinGW) and legacy Rust.
#ifndef INPROF_TOOLS_SYMBOLICATE_DEMANGLE_H_
#define INPROF_TOOLS_SYMBOLICATE_DEMANGLE_H_

#include <string>

namespace inprof::symbolicate {

// "_ZN3foo3barEv" -> "foo::bar()"; legacy Rust symbols lose their hash ("_ZN4core3fmt5write17h…E"
// -> "core::fmt::write"); anything else is returned unchanged.
std::string demangle(const char* name);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_DEMANGLE_H_
