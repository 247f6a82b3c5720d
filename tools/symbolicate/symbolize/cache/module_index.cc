#include "symbolize/cache/module_index.h"

#include <climits>
#include <utility>

#include "symbolize/demangle.h"

namespace inprof::symbolicate {

void keep_symbol_names(ModuleIndex::Module& m) {
  size_t total = 0;
  for (const ModuleIndex::Symbol& s : m.symbols) total += s.name.size() + 1;
  auto names = std::make_shared<std::string>();
  names->reserve(total);
  for (const ModuleIndex::Symbol& s : m.symbols) {
    names->append(s.name);
    names->push_back('\0');
  }
  size_t at = 0;  // the block is complete: views into it stay valid
  for (ModuleIndex::Symbol& s : m.symbols) {
    const size_t n = s.name.size();
    s.name = std::string_view(names->data() + at, n);
    at += n + 1;
  }
  m.names = std::move(names);
}

void ModuleIndex::set_module(Module module) {
  module_ = std::make_shared<const Module>(std::move(module));
  demangled_.clear();
  module_added_ = true;
}

void ModuleIndex::add_unit(uint64_t offset, Unit data) {
  std::optional<Unit>& slot = units_[offset];
  if (slot) return;
  slot = std::move(data);
  added_.push_back(offset);
}

const ModuleIndex::Unit* ModuleIndex::unit(uint64_t offset) {
  auto [it, inserted] = units_.try_emplace(offset);
  if (inserted && source_) it->second = source_(offset);
  return it->second ? &*it->second : nullptr;
}

std::shared_ptr<const KnownUnits> ModuleIndex::known_units() const {
  if (!module_ || !module_->has_dwarf || !module_->aranges_usable) return nullptr;
  auto known = std::make_shared<KnownUnits>();
  known->bias = module_->bias;
  known->ranges.reserve(module_->aranges.size());
  static_assert(kAskTheReader == 0);  // KnownUnits' "not known"
  for (const Arange& a : module_->aranges) known->ranges.push_back({a.addr, a.length, a.unit});
  return known;
}

std::shared_ptr<const KnownSymbols> ModuleIndex::known_symbols() const {
  if (!module_) return nullptr;
  return std::shared_ptr<const KnownSymbols>(module_, &module_->symbols);  // keeps module_
}

std::optional<AddressSymbol> ModuleIndex::symbolize(uint64_t vaddr) {
  if (!module_) return std::nullopt;
  const Module& m = *module_;
  AddressSymbol out;
  const Symbol* s = symbol_containing(m.symbols, vaddr);
  // A nameless entry ends a size-less symbol's section: no symbol holds the address there.
  if (s && !s->name.empty()) {
    const size_t i = static_cast<size_t>(s - m.symbols.data());
    auto [it, inserted] = demangled_.try_emplace(i);
    if (inserted) it->second = demangle(s->name.data());  // NUL-terminated (Module::names)
    out.symbol = NativeSymbolInfo{it->second, s->start,
                                  s->size ? std::optional<uint64_t>(s->size) : std::nullopt};
  }
  if (!m.has_dwarf) {
    frames_without_unit(out);
    return out;
  }
  if (!m.aranges_usable) return std::nullopt;
  const uint64_t pc = vaddr - m.bias;
  auto range = std::upper_bound(m.aranges.begin(), m.aranges.end(), pc,
                                [](uint64_t a, const Arange& r) { return a < r.addr; });
  if (range == m.aranges.begin() || pc - (range - 1)->addr >= (range - 1)->length) {
    frames_without_unit(out);  // in no unit
    return out;
  }
  if ((range - 1)->unit == kAskTheReader) return std::nullopt;
  const Unit* u = unit((range - 1)->unit);
  if (!u) return std::nullopt;
  std::string leaf_file;
  uint32_t leaf_line = 0;
  std::optional<LineTable::Location> at;
  if (!u->lines.find(pc, &at)) return std::nullopt;  // damaged: the reader's
  if (at) {
    if (at->file < u->lines.files().size()) leaf_file = u->lines.files()[at->file];
    if (at->line > 0 && at->line <= INT32_MAX) leaf_line = static_cast<uint32_t>(at->line);
  }
  std::vector<uint32_t> chain;
  // A whole tree has nothing left to expand; a node that is not would be damage.
  bool whole = true;
  auto not_whole = [&](uint32_t) { return whole = false; };
  if (u->stored) {
    chain_of(*u->stored, pc, chain, not_whole);
  } else {
    u->tree.chain(pc, chain, not_whole);
  }
  if (!whole) return std::nullopt;
  if (u->stored) {
    frames_from_chain(*u->stored, chain, leaf_file, leaf_line, pc, m.bias, out);
  } else {
    frames_from_chain(u->tree, chain, leaf_file, leaf_line, pc, m.bias, out);
  }
  return out;
}

}  // namespace inprof::symbolicate
