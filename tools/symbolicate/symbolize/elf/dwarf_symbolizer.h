// The Linux build's ModuleSymbolizer (module_symbolizer.h): a module's ELF and DWARF read with
// libdwfl. Internal to symbolize/elf/: everyone else opens it through ModuleSymbolizer::open.
#ifndef INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_ELF_DWARF_SYMBOLIZER_H_
#define INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_ELF_DWARF_SYMBOLIZER_H_

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "symbolize/cache/module_index.h"
#include "symbolize/elf/dwarf_unit_index.h"
#include "symbolize/elf/unit_ranges.h"
#include "symbolize/line_table.h"
#include "symbolize/module_symbolizer.h"

namespace inprof::symbolicate {

// The Linux reader: libdwfl over the module's ELF file and its debug file. DWARF function names,
// inline chains and lines first, the ELF symbol table as a fallback. Each compilation unit is
// indexed once (its function and inline ranges as a tree), so an address costs a few binary
// searches. Also answers the CFI question behind the leaf fix-up.
class DwarfModuleSymbolizer final : public ModuleSymbolizer {
 public:
  DwarfModuleSymbolizer(Dwfl* dwfl, Dwfl_Module* module);
  ~DwarfModuleSymbolizer() override;

  AddressSymbol symbolize(uint64_t vaddr) override;
  uint64_t unit_of(uint64_t vaddr) override {
    Dwarf_Addr bias = 0;
    Dwarf_Die* cudie = unit_at(vaddr, &bias);
    return cudie ? dwarf_dieoffset(cudie) + 1 : 0;
  }
  std::optional<unsigned> return_address_slot(uint64_t vaddr, bool aarch64) override;
  bool has_dwarf() const override { return dwarf_ != nullptr; }
  void use_known_units(std::shared_ptr<const KnownUnits> known) override {
    if (known && dwarf_ && known->bias == dwarf_bias_) known_units_ = std::move(known);
  }
  void use_known_symbols(std::shared_ptr<const KnownSymbols> known) override {
    if (!symbols_loaded_) known_symbols_ = std::move(known);
  }
  void export_index(ModuleIndex& index) override;
  bool read_code(uint64_t vaddr, std::span<uint8_t> out) override;
  void set_main_is_binary(bool yes) { main_is_binary_ = yes; }

 private:
  struct ElfSymbol {
    uint64_t start;
    uint64_t size;  // 0: unknown, runs to the next symbol
    const char* name;
    int rank;  // among symbols at one address the highest wins (global, sized)
  };
  // The ELF symbols, read (or taken from known_symbols_) on first use.
  const std::vector<ElfSymbol>& symbols();
  void load_symbols();
  // After a symbol without a size at `addr`: a nameless entry where its section ends.
  void add_section_end(const GElf_Sym& sym, uint64_t addr, GElf_Word shndx, Elf* elf);
  // The compilation unit whose address ranges hold `vaddr`, or null; *bias as libdwfl's.
  Dwarf_Die* unit_at(uint64_t vaddr, Dwarf_Addr* bias);
  // The unit libdwfl finds through .debug_aranges, if an arange agrees; else null.
  Dwarf_Die* listed_unit_at(uint64_t vaddr, Dwarf_Addr* bias);
  // The units .debug_aranges leaves out, by their DIEs' ranges (unit_ranges.h), read once.
  const std::vector<UnitRange>& unlisted_units();
  // The CU DIE at `offset`, kept; null if there is none.
  Dwarf_Die* unit_die(uint64_t offset);
  // The module part of the index (ModuleIndex::Module), as this reader finds units.
  ModuleIndex::Module module_part();
  // The ELF symbol containing `vaddr`, or null.
  const ElfSymbol* symbol_at(uint64_t vaddr);
  const std::string& demangled(const ElfSymbol& symbol);
  // The index of the compilation unit whose DIE is at `cu_offset`, built on first use.
  DwarfUnitIndex& unit_index(uint64_t cu_offset);
  // The unit's line program by our reader (null: libdw must answer), its rows decoded if asked.
  const LineTable* line_table(Dwarf_Die* cudie, bool with_rows);
  // The file of DW_AT_decl_file (through abstract origins and specifications), as
  // dwarf_decl_file names it.
  std::string decl_file(Dwarf_Attribute* decl_file, Dwarf_Die* die);
  std::string call_file(Dwarf_Die* cudie, Dwarf_Die* inlined);
  // Names and places the node `n` of `unit` (once).
  void describe(DwarfUnitIndex& unit, uint32_t n, Dwarf_Addr bias);
  // "ns::Class::name" for the function DIE at `die_offset` ("name" in C), from its DW_AT_name.
  std::optional<std::string> qualified(Dwarf_Die* named);

  Dwfl* dwfl_;
  Dwfl_Module* module_;
  bool main_is_binary_ = false;  // the main ELF is the module's binary, with its code
  Dwarf* dwarf_ = nullptr;
  uint64_t dwarf_bias_ = 0;
  std::vector<ElfSymbol> symbols_;  // by start address
  bool symbols_loaded_ = false;
  std::shared_ptr<const KnownSymbols> known_symbols_;  // the names symbols_ points to, if any
  std::deque<std::string> unversioned_names_;          // of symbols named "name@VERSION"
  std::unordered_map<const char*, std::string> demangled_;
  std::unordered_map<uint64_t, std::unique_ptr<DwarfUnitIndex>> units_;    // by CU DIE offset
  std::shared_ptr<const KnownUnits> known_units_;                          // null: none
  std::unordered_map<uint64_t, Dwarf_Die> unit_dies_;                      // by CU DIE offset
  std::optional<std::vector<UnitRange>> unlisted_units_;                   // unset: not read yet
  std::unordered_map<uint64_t, std::unique_ptr<DwarfScopeIndex>> scopes_;  // by CU DIE offset
  std::optional<LineSections> line_sections_;  // unset: every line question goes to libdw
  struct UnitLines {
    std::optional<LineTable> table;
    bool with_rows = false;
    bool failed = false;
  };
  std::unordered_map<uint64_t, UnitLines> line_tables_;  // by CU DIE offset
};

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_ELF_DWARF_SYMBOLIZER_H_
