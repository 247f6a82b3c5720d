// Symbolizes addresses inside one module (an ELF file and, if apart, its debug file) with libdw:
// DWARF function names, inline chains and lines first, the ELF symbol table as a fallback. Each
// compilation unit is indexed once (its function and inline ranges as a tree), so an address
// costs a few binary searches. Not thread-safe: use one per thread. Also answers the CFI question
// behind the leaf fix-up.
#ifndef INPROF_TOOLS_SYMBOLICATE_MODULE_SYMBOLIZER_H_
#define INPROF_TOOLS_SYMBOLICATE_MODULE_SYMBOLIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "debug_file_locator.h"
#include "dump/dump_records.h"

struct Dwarf;
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
  // Opens the files found for a module (see debug_file_locator.h). Returns null, with the reason
  // in `why`, when they cannot be read as ELF.
  static std::unique_ptr<ModuleSymbolizer> open(const ModuleFiles& files, std::string* why);
  // Locates the module's files with the default search (recorded path, /usr/lib/debug) first.
  static std::unique_ptr<ModuleSymbolizer> open(const internal::ModuleRecord& module,
                                                std::string* why);
  ~ModuleSymbolizer();
  ModuleSymbolizer(const ModuleSymbolizer&) = delete;
  ModuleSymbolizer& operator=(const ModuleSymbolizer&) = delete;

  // What is known about the code at ELF virtual address `vaddr`. Cached.
  const AddressSymbol& lookup(uint64_t vaddr);
  // The same, uncached (the per-unit indexes and names are still reused).
  AddressSymbol symbolize(uint64_t vaddr);

  // Where a function that has no frame record at `vaddr` keeps its return address, as a leaf
  // candidate slot (FORMAT.md): on x86-64, if the CFI defines the CFA as rsp + off, the stack
  // slot (off - 8) / 8; on aarch64, if the CFA is sp-based, the link register
  // (internal::kLeafCandidateLinkRegister). Nothing when the CFA is based on the frame pointer
  // (the frame-pointer walk was right) or no CFI covers the address.
  std::optional<unsigned> return_address_slot(uint64_t vaddr, bool aarch64);

  bool has_dwarf() const { return dwarf_ != nullptr; }

 private:
  struct ElfSymbol {
    uint64_t start;
    uint64_t size;  // 0: unknown, runs to the next symbol
    const char* name;
    int rank;  // among symbols at one address the highest wins (global, sized)
  };
  struct UnitIndex;
  struct ScopeIndex;

  ModuleSymbolizer(Dwfl* dwfl, Dwfl_Module* module);
  void load_symbols();
  // The ELF symbol containing `vaddr`, or null.
  const ElfSymbol* symbol_at(uint64_t vaddr) const;
  const std::string& demangled(const ElfSymbol& symbol);
  // The index of the compilation unit whose DIE is at `cu_offset`, built on first use.
  UnitIndex& unit_index(uint64_t cu_offset);
  // "ns::Class::name" for the function DIE at `die_offset` ("name" in C), from its DW_AT_name.
  std::optional<std::string> qualified(uint64_t die_offset);

  Dwfl* dwfl_;
  Dwfl_Module* module_;
  Dwarf* dwarf_ = nullptr;
  uint64_t dwarf_bias_ = 0;
  std::vector<ElfSymbol> symbols_;  // by start address
  std::unordered_map<const char*, std::string> demangled_;
  std::unordered_map<uint64_t, std::unique_ptr<UnitIndex>> units_;    // by CU DIE offset
  std::unordered_map<uint64_t, std::unique_ptr<ScopeIndex>> scopes_;  // by CU DIE offset
  std::unordered_map<uint64_t, AddressSymbol> cache_;
};

// "_ZN3foo3barEv" -> "foo::bar()"; legacy Rust symbols lose their hash ("_ZN4core3fmt5write17h…E"
// -> "core::fmt::write"); anything else is returned unchanged.
std::string demangle(const char* name);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_MODULE_SYMBOLIZER_H_
