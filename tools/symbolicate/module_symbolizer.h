// Symbolizes addresses inside one module (an ELF file) with libdwfl: DWARF function names,
// inline chains and lines first, the ELF symbol table as a fallback. Results are cached per
// address. Also answers the CFI question behind the leaf fix-up.
#ifndef INPROF_TOOLS_SYMBOLICATE_MODULE_SYMBOLIZER_H_
#define INPROF_TOOLS_SYMBOLICATE_MODULE_SYMBOLIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "dump/dump_records.h"

struct Dwfl;
struct Dwfl_Module;

namespace inprof::symbolicate {

// One function level at an address: the physical function or one inlined into it.
struct SourceFrame {
  std::string function;    // demangled
  std::string file;        // where the function is declared (or, failing that, the line's file)
  uint32_t decl_line = 0;  // the function's first line; 0 if unknown
  uint32_t line = 0;       // the line executing in this function at the address; 0 if unknown
};

struct NativeSymbolInfo {
  std::string name;    // demangled
  uint64_t vaddr = 0;  // ELF virtual address of the symbol's start
  std::optional<uint64_t> size;
};

struct AddressSymbol {
  // Outermost (the physical function) first, deepest inlinee last. Empty: nothing known.
  std::vector<SourceFrame> frames;
  std::optional<NativeSymbolInfo> symbol;
};

class ModuleSymbolizer {
 public:
  // Opens the module's file. Returns null, with the reason in `why`, when the file is missing,
  // not a regular file, not ELF, or its build-id differs from the one recorded in the dump.
  static std::unique_ptr<ModuleSymbolizer> open(const internal::ModuleRecord& module,
                                                std::string* why);
  ~ModuleSymbolizer();
  ModuleSymbolizer(const ModuleSymbolizer&) = delete;
  ModuleSymbolizer& operator=(const ModuleSymbolizer&) = delete;

  // What is known about the code at ELF virtual address `vaddr`. Cached.
  const AddressSymbol& lookup(uint64_t vaddr);

  // x86-64: if the CFI at `vaddr` defines the CFA as rsp + off, the stack slot (word index above
  // SP) holding the return address, i.e. (off - 8) / 8. Nothing when the CFA is based on another
  // register or no CFI covers the address.
  std::optional<unsigned> x86_64_return_address_slot(uint64_t vaddr);

  bool has_dwarf() const { return has_dwarf_; }

 private:
  ModuleSymbolizer(Dwfl* dwfl, Dwfl_Module* module);
  AddressSymbol symbolize(uint64_t vaddr);

  Dwfl* dwfl_;
  Dwfl_Module* module_;
  bool has_dwarf_ = false;
  std::unordered_map<uint64_t, AddressSymbol> cache_;
};

// "_ZN3foo3barEv" -> "foo::bar()"; anything that is not a mangled name is returned unchanged.
std::string demangle(const char* name);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_MODULE_SYMBOLIZER_H_
