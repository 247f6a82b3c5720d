// What makes a new address of a module cheap to symbolize, kept in the symbol cache
// (symbol_cache.h) per build-id next to the addresses already symbolized: the module's ELF
// symbols and DWARF address ranges (which unit holds an address), and, for every compilation
// unit a run has touched, its whole function tree, named and placed (unit_tree.h), and its line
// table. An address of an indexed unit, or of no unit, is then symbolized without opening the
// module: the second dump of a release mostly falls in the units the first one touched.
//
// Answers are those of the DWARF reader by construction: the index holds what the reader itself
// computed (its symbol table, its trees, its line rows), and both turn them into frames with the
// same code. What the reader cannot vouch for is left out and answered by the reader: a unit
// whose lines libdw had to read, address ranges that overlap or that libdwfl assigns
// differently. Each unit is a file of its own (module_index_file.cc), read, checked and decoded
// only when an address needs it; a damaged one is as good as absent.
#ifndef INPROF_TOOLS_SYMBOLICATE_MODULE_INDEX_H_
#define INPROF_TOOLS_SYMBOLICATE_MODULE_INDEX_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "symbolize/line_table.h"
#include "symbolize/module_symbolizer.h"
#include "symbolize/packed_line_table.h"
#include "symbolize/unit_tree.h"

namespace inprof::symbolicate {

// Bumped whenever the file form or what the reader makes of the DWARF changes.
// 2: line rows in blocks; 3: a size-less symbol ends with its section (a nameless entry);
// 4: the ranges of units .debug_aranges leaves out (all of clang's) are theirs, not "no unit".
inline constexpr uint32_t kModuleIndexVersion = 4;

class ModuleIndex {
 public:
  using Symbol = KnownSymbol;
  // libdw's address ranges, and those of the units they leave out (unit_ranges.h):
  // [addr, addr + length) is in the unit at `unit`.
  struct Arange {
    uint64_t addr, length, unit;
  };
  // An Arange::unit: the range's addresses are left to the reader (libdwfl places them
  // elsewhere). No unit's DIE is at offset 0.
  static constexpr uint64_t kAskTheReader = 0;
  struct Unit {
    UnitTree tree;  // whole: every node expanded and described (a unit added by a reader)
    PackedLineTable lines;
    // A unit decoded from its file: its tree where the file holds it (then `tree` is unused).
    std::optional<StoredUnitTree> stored;
  };

  // The module-wide part, set by the reader that first exports (ModuleSymbolizer::export_index).
  struct Module {
    bool has_dwarf = false;
    // The aranges decide the unit of every address (checked against libdwfl's choice); false:
    // every address in DWARF is left to the reader.
    bool aranges_usable = false;
    uint64_t bias = 0;            // libdwfl's DWARF bias
    std::vector<Symbol> symbols;  // by start, one per address
    // The symbols' names, each followed by a NUL, in one block (keep_symbol_names).
    std::shared_ptr<const std::string> names;
    std::vector<Arange> aranges;  // by address, not overlapping, none empty
  };

  bool has_module() const { return module_ != nullptr; }
  const Module* module() const { return module_.get(); }
  void set_module(Module module);
  // Where units not yet in memory come from: the unit decoded from its file (decode_unit), or
  // nothing. Unset: only the units added here.
  using UnitSource = std::function<std::optional<Unit>(uint64_t unit)>;
  void set_unit_source(UnitSource source) { source_ = std::move(source); }
  // Whether the unit at `unit` (its DIE offset) is indexed and intact.
  bool has_unit(uint64_t unit) { return this->unit(unit) != nullptr; }
  // Adds a unit not yet indexed; its tree must be whole.
  void add_unit(uint64_t unit, Unit data);
  // What was set or added since the index was read: to be written.
  bool module_added() const { return module_added_; }
  const std::vector<uint64_t>& added_units() const { return added_; }

  // The units of the module part's address ranges, for a reader opened for what the index cannot
  // answer (ModuleSymbolizer::use_known_units); null when it has none usable.
  std::shared_ptr<const KnownUnits> known_units() const;
  // The module part's ELF symbols, for such a reader (ModuleSymbolizer::use_known_symbols);
  // null without a module part.
  std::shared_ptr<const KnownSymbols> known_symbols() const;

  // What the reader would answer for `vaddr` (the module's own address); nullopt when the index
  // cannot tell without it (no module part, a unit not indexed or damaged).
  std::optional<AddressSymbol> symbolize(uint64_t vaddr);

  // The file forms (module_index_file.cc): the module part, and each unit in a file of its
  // own, so that a run reads only the units it needs and writes only those it adds. `key`
  // names the module (SymbolCache::key) and is checked, as is a checksum of the whole.
  std::string encode_module(std::string_view key) const;
  // nullopt when the bytes are not an intact module part for `key`.
  static std::optional<ModuleIndex> decode_module(std::string_view key, std::string_view bytes);
  std::string encode_unit(std::string_view key, uint64_t unit) const;
  // `owner`, if given, keeps `bytes` (a mapped file): the unit's line rows stay there, uncopied.
  static std::optional<Unit> decode_unit(std::string_view key, uint64_t unit,
                                         std::string_view bytes,
                                         std::shared_ptr<const void> owner = nullptr);

 private:
  const Unit* unit(uint64_t offset);

  std::shared_ptr<const Module> module_;  // shared with readers handed its symbols
  // By unit DIE offset: decoded or added, or nullopt when the source had none intact.
  std::map<uint64_t, std::optional<Unit>> units_;
  std::map<size_t, std::string> demangled_;  // by symbol index
  UnitSource source_;
  bool module_added_ = false;
  std::vector<uint64_t> added_;
};

// Copies the names of `m.symbols` (views of storage that may go away: a reader's symbol table, a
// cache file) into `m.names` and points the symbols there: one block, not a string per symbol
// (python3.11 has 10,000).
void keep_symbol_names(ModuleIndex::Module& m);

// The symbol of `symbols` (by start, one per address) containing `vaddr`, or null.
template <typename Symbols>
auto symbol_containing(const Symbols& symbols, uint64_t vaddr) -> decltype(&symbols[0]) {
  auto it = std::upper_bound(symbols.begin(), symbols.end(), vaddr,
                             [](uint64_t v, const auto& s) { return v < s.start; });
  if (it == symbols.begin()) return nullptr;
  --it;
  if (it->size && vaddr >= it->start + it->size) return nullptr;
  return &*it;
}

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_MODULE_INDEX_H_
