// Where a binary's code is, as binutils' readelf reads it: independent of the libelf/libdw code
// under test, for the tests that walk a binary's code addresses.
#ifndef INPROF_TESTS_SYMBOLICATE_CODE_LAYOUT_H_
#define INPROF_TESTS_SYMBOLICATE_CODE_LAYOUT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace symtest {

// Runs a shell command; its standard output.
std::string run_command(const std::string& command);

// .text's address and size in the ELF file at `path`; size 0 if absent.
std::pair<uint64_t, uint64_t> text_section(const std::string& path);

struct FunctionSymbol {
  uint64_t start = 0, size = 0;  // size 0: not given (assembly, crtstuff.c)
  std::string name;              // as in the symbol table (mangled)
};

// The defined FUNC symbols of the file's .symtab and .dynsym, by start address.
std::vector<FunctionSymbol> function_symbols(const std::string& path);

// The detached debug file of `binary` under /usr/lib/debug/.build-id; empty if none.
std::string debug_file_by_build_id(const std::string& binary);

}  // namespace symtest

#endif  // INPROF_TESTS_SYMBOLICATE_CODE_LAYOUT_H_
