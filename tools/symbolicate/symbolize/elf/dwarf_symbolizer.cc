#include "symbolize/elf/dwarf_symbolizer.h"

#include <dwarf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "dump/dump_records.h"
#include "symbolize/binary_code.h"
#include "symbolize/elf/cfi_slot.h"
#include "symbolize/elf/debug_image.h"
#include "symbolize/elf/die_attributes.h"
#include "symbolize/elf/elf_file.h"
#include "symbolize/elf/libdw_line_tables.h"
#include "symbolize/elf/unit_ranges.h"
#include "symbolize/macho/macho_symbolizer.h"
#include "symbolize/unit_tree.h"

namespace inprof::symbolicate {
namespace {

// A descriptor of its own on `image` (libdwfl closes what it is given).
int dup_image(const DebugImage& image) { return ::fcntl(image.fd(), F_DUPFD_CLOEXEC, 0); }

// The module's debug file was found beforehand (debug_file_locator): hand it, or its inflated
// image, to libdwfl. The ModuleFiles ride in the module's userdata slot. The name stays the
// file's own: libdwfl looks for a .gnu_debugaltlink file next to it.
int find_located_debuginfo(Dwfl_Module*, void** userdata, const char*, Dwarf_Addr, const char*,
                           const char*, GElf_Word, char** debuginfo_file_name) {
  const auto* files = static_cast<const ModuleFiles*>(*userdata);
  if (!files) return -1;
  std::string why;
  int fd =
      files->debug_image ? dup_image(*files->debug_image) : open_regular_file(files->debug, &why);
  if (fd >= 0) *debuginfo_file_name = strdup(files->debug.c_str());
  return fd;
}

char* no_search_path = nullptr;
const Dwfl_Callbacks kCallbacks = {
    .find_elf = nullptr,
    .find_debuginfo = find_located_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &no_search_path,
};

}  // namespace

std::optional<std::string> DwarfModuleSymbolizer::qualified(Dwarf_Die* named) {
  const char* base = dwarf_diename(named);
  if (!base) return std::nullopt;
  Dwarf_Die cu;
  if (!dwarf_diecu(named, &cu, nullptr, nullptr)) return std::nullopt;
  // C has no namespaces and no member functions: its units need no walk for prefixes.
  switch (dwarf_srclang(&cu)) {
    case DW_LANG_C89:
    case DW_LANG_C:
    case DW_LANG_C99:
    case DW_LANG_C11:
      return std::string(base);
    default:
      break;
  }
  auto& slot = scopes_[dwarf_dieoffset(&cu)];
  if (!slot) {
    slot = std::make_unique<DwarfScopeIndex>();
    slot->collect(&cu, std::string(), 0);
  }
  auto it = slot->prefixes.find(dwarf_dieoffset(named));
  if (it == slot->prefixes.end()) return std::string(base);
  std::string prefix = it->second;
  const std::string kUnnamed = "{unnamed type}::";
  if (std::strncmp(base, "operator()", 10) == 0 && prefix.size() >= kUnnamed.size() &&
      prefix.compare(prefix.size() - kUnnamed.size(), kUnnamed.size(), kUnnamed) == 0) {
    prefix.replace(prefix.size() - kUnnamed.size(), kUnnamed.size(), "{lambda}::");
  }
  return prefix + base;
}

DwarfUnitIndex& DwarfModuleSymbolizer::unit_index(uint64_t cu_offset) {
  auto& slot = units_[cu_offset];
  if (!slot) {
    slot = std::make_unique<DwarfUnitIndex>();
    Dwarf_Die cudie;
    if (dwarf_offdie(dwarf_, cu_offset, &cudie)) slot->build(&cudie);
  }
  return *slot;
}

std::unique_ptr<ModuleSymbolizer> ModuleSymbolizer::open(const ModuleFiles& files,
                                                         std::string* why) {
  if (files.macho) return open_macho_symbolizer(files, why);
  // The binary carries the CFI (.eh_frame) and the loaded layout; without it the debug file
  // alone still has the symbols, the DWARF and the program headers.
  const std::string& main = files.binary.empty() ? files.debug : files.binary;
  // A binary that carries its own DWARF is its debug file: its image stands in for it.
  const bool main_is_debug = main == files.debug;
  int fd = main_is_debug && files.debug_image ? dup_image(*files.debug_image)
                                              : open_regular_file(main, why);
  if (fd < 0) {
    if (why->empty()) *why = std::string("cannot open: ") + std::strerror(errno);
    return nullptr;
  }
  Dwfl* dwfl = dwfl_begin(&kCallbacks);
  if (!dwfl) {
    ::close(fd);
    *why = std::string("libdwfl: ") + dwfl_errmsg(-1);
    return nullptr;
  }
  dwfl_report_begin(dwfl);
  // Base 0 relative to p_vaddr: libdwfl addresses are then the file's own virtual addresses.
  Dwfl_Module* mod = dwfl_report_elf(dwfl, main.c_str(), main.c_str(), fd, 0, true);
  if (!mod) {
    *why = std::string("not a usable ELF file (") + dwfl_errmsg(-1) + ")";
    ::close(fd);  // not consumed on failure
    dwfl_end(dwfl);
    return nullptr;
  }
  dwfl_report_end(dwfl, nullptr, nullptr);
  if (!files.debug.empty() && !main_is_debug) {
    void** userdata = nullptr;
    dwfl_module_info(mod, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (userdata) *userdata = const_cast<ModuleFiles*>(&files);
  }
  auto symbolizer = std::make_unique<DwarfModuleSymbolizer>(dwfl, mod);
  symbolizer->set_main_is_binary(!files.binary.empty());
  // The files are only needed while libdwfl looks for the DWARF, which the constructor does.
  void** userdata = nullptr;
  dwfl_module_info(mod, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  if (userdata) *userdata = nullptr;
  return symbolizer;
}

DwarfModuleSymbolizer::DwarfModuleSymbolizer(Dwfl* dwfl, Dwfl_Module* module)
    : dwfl_(dwfl), module_(module) {
  Dwarf_Addr bias = 0;
  dwarf_ = dwfl_module_getdwarf(module_, &bias);
  dwarf_bias_ = bias;
  if (dwarf_) line_sections_ = line_sections_of(dwarf_);
}

Dwarf_Die* DwarfModuleSymbolizer::unit_die(uint64_t offset) {
  auto [it, inserted] = unit_dies_.try_emplace(offset);
  if (inserted && !dwarf_offdie(dwarf_, offset, &it->second)) {
    unit_dies_.erase(it);
    return nullptr;
  }
  return &it->second;
}

const std::vector<UnitRange>& DwarfModuleSymbolizer::unlisted_units() {
  if (!unlisted_units_) unlisted_units_ = ranges_of_units_without_aranges(dwarf_);
  return *unlisted_units_;
}

Dwarf_Die* DwarfModuleSymbolizer::unit_at(uint64_t vaddr, Dwarf_Addr* bias) {
  if (!dwarf_) return nullptr;
  const uint64_t pc = vaddr - dwarf_bias_;
  if (known_units_) {
    // The unit the index found for the address when it was made (export_index): the same CU
    // DIE, found without libdwfl's search. Elsewhere, the reader decides as below.
    const std::vector<KnownUnits::Range>& ranges = known_units_->ranges;
    auto r = std::upper_bound(ranges.begin(), ranges.end(), pc,
                              [](uint64_t a, const KnownUnits::Range& k) { return a < k.addr; });
    if (r != ranges.begin() && pc - (r - 1)->addr < (r - 1)->length && (r - 1)->unit != 0) {
      if (Dwarf_Die* cudie = unit_die((r - 1)->unit)) {
        *bias = dwarf_bias_;
        return cudie;
      }
    }
  }
  if (Dwarf_Die* cudie = listed_unit_at(vaddr, bias)) return cudie;
  // libdwfl searches only the units .debug_aranges lists: clang's are in none.
  const uint64_t unit = unit_holding(unlisted_units(), pc);
  Dwarf_Die* cudie = unit ? unit_die(unit) : nullptr;
  if (cudie) *bias = dwarf_bias_;
  return cudie;
}

Dwarf_Die* DwarfModuleSymbolizer::listed_unit_at(uint64_t vaddr, Dwarf_Addr* bias) {
  Dwarf_Die* cudie = dwfl_module_addrdie(module_, vaddr, bias);
  if (!cudie) return nullptr;
  // libdwfl counts the gaps between one unit's address ranges and the next unit's as the first
  // unit's: code of no unit there (crt1.o's _start) would borrow its files and lines. The
  // aranges it read say exactly which unit, if any, holds the address.
  Dwarf_Aranges* aranges = nullptr;
  size_t count = 0;
  if (dwarf_getaranges(dwarf_, &aranges, &count) != 0) return cudie;  // cannot tell: as before
  Dwarf_Arange* arange = dwarf_getarange_addr(aranges, vaddr - *bias);
  Dwarf_Off unit = 0;
  if (!arange || dwarf_getarangeinfo(arange, nullptr, nullptr, &unit) != 0 ||
      unit != dwarf_dieoffset(cudie)) {
    return nullptr;
  }
  return cudie;
}

const LineTable* DwarfModuleSymbolizer::line_table(Dwarf_Die* cudie, bool with_rows) {
  if (!line_sections_) return nullptr;
  UnitLines& slot = line_tables_[dwarf_dieoffset(cudie)];
  if (slot.failed) return nullptr;
  if (slot.table && (slot.with_rows || !with_rows)) return &*slot.table;
  // A unit our reader cannot read is left to libdw whole, files and rows alike.
  std::string why;
  auto options = line_options_of(cudie, with_rows);
  slot.table = options ? LineTable::parse(*line_sections_, *options, &why) : std::nullopt;
  slot.with_rows = with_rows;
  slot.failed = !slot.table;
  return slot.table ? &*slot.table : nullptr;
}

std::string DwarfModuleSymbolizer::decl_file(Dwarf_Attribute* attr, Dwarf_Die* die) {
  Dwarf_Word index = 0;
  if (!attr->form || dwarf_formudata(attr, &index) != 0) return {};
  if (index == 0) return {};  // libdw reads 0 as "no file", in every DWARF version
  Dwarf_Die cu;
  const LineTable* table = nullptr;
  if (dwarf_cu_getdwarf(attr->cu) == dwarf_ &&
      dwarf_cu_die(attr->cu, &cu, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr)) {
    table = line_table(&cu, false);
  }
  if (!table) {
    const char* name = dwarf_decl_file(die);
    return name ? name : "";
  }
  return index < table->files().size() ? table->files()[index] : "";
}

std::string DwarfModuleSymbolizer::call_file(Dwarf_Die* cudie, Dwarf_Die* inlined) {
  const LineTable* table = line_table(cudie, false);
  if (!table) return libdw_call_file(cudie, inlined);
  Dwarf_Attribute attr;
  Dwarf_Word index;
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &index) != 0) return {};
  return index < table->files().size() ? table->files()[index] : "";
}

DwarfModuleSymbolizer::~DwarfModuleSymbolizer() { dwfl_end(dwfl_); }

const std::vector<DwarfModuleSymbolizer::ElfSymbol>& DwarfModuleSymbolizer::symbols() {
  if (symbols_loaded_) return symbols_;
  symbols_loaded_ = true;
  if (!known_symbols_) {
    load_symbols();
    return symbols_;
  }
  // Already one per address, by start: what load_symbols() left when the index was made.
  symbols_.reserve(known_symbols_->size());
  for (const KnownSymbol& k : *known_symbols_)
    symbols_.push_back({k.start, k.size, k.name.data(), 0});
  return symbols_;
}

void DwarfModuleSymbolizer::load_symbols() {
  int n = dwfl_module_getsymtab(module_);
  for (int i = 1; i < n; ++i) {
    GElf_Sym sym;
    GElf_Addr addr = 0;
    GElf_Word shndx = 0;
    Elf* elf = nullptr;
    const char* name = dwfl_module_getsym_info(module_, i, &sym, &addr, &shndx, &elf, nullptr);
    if (!name || !*name || sym.st_shndx == SHN_UNDEF) continue;
    int type = GELF_ST_TYPE(sym.st_info);
    if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
    int binding = GELF_ST_BIND(sym.st_info);
    int rank = (binding == STB_GLOBAL ? 4 : binding == STB_WEAK ? 2 : 0) + (sym.st_size ? 1 : 0);
    // glibc's .symver compat symbols keep their version in .symtab ("xdr_uint32_t@GLIBC_2.2.5"):
    // the function is "xdr_uint32_t". No mangled name contains '@'.
    if (const char* at = std::strchr(name + 1, '@')) {
      name = unversioned_names_.emplace_back(name, at - name).c_str();
    }
    symbols_.push_back({addr, sym.st_size, name, rank});
    if (sym.st_size == 0) add_section_end(sym, addr, shndx, elf);
  }
  std::sort(symbols_.begin(), symbols_.end(), [](const ElfSymbol& a, const ElfSymbol& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.rank != b.rank) return a.rank > b.rank;
    return std::strcmp(a.name, b.name) < 0;  // deterministic among equals
  });
  // One symbol per address: the best ranked.
  symbols_.erase(
      std::unique(symbols_.begin(), symbols_.end(),
                  [](const ElfSymbol& a, const ElfSymbol& b) { return a.start == b.start; }),
      symbols_.end());
}

void DwarfModuleSymbolizer::add_section_end(const GElf_Sym& sym, uint64_t addr, GElf_Word shndx,
                                            Elf* elf) {
  // A symbol without a size (an assembly routine, _init) runs to the next symbol, but never past
  // the end of its section: the PLT's stubs, after .init, were named "_init". A nameless entry
  // where the section ends stops it (kept by the module index like any symbol).
  if (!elf || shndx == SHN_UNDEF || shndx >= SHN_LORESERVE) return;
  Elf_Scn* section = elf_getscn(elf, shndx);
  GElf_Shdr header;
  if (!section || !gelf_getshdr(section, &header) || !(header.sh_flags & SHF_ALLOC)) return;
  const uint64_t end = header.sh_addr + header.sh_size + (addr - sym.st_value);
  if (end > addr) symbols_.push_back({end, 0, "", -1});
}

const DwarfModuleSymbolizer::ElfSymbol* DwarfModuleSymbolizer::symbol_at(uint64_t vaddr) {
  const std::vector<ElfSymbol>& all = symbols();
  auto it = std::upper_bound(all.begin(), all.end(), vaddr,
                             [](uint64_t v, const ElfSymbol& s) { return v < s.start; });
  if (it == all.begin()) return nullptr;
  --it;
  if (it->size && vaddr >= it->start + it->size) return nullptr;
  if (*it->name == '\0') return nullptr;  // past the end of a size-less symbol's section
  return &*it;
}

const std::string& DwarfModuleSymbolizer::demangled(const ElfSymbol& symbol) {
  auto [it, inserted] = demangled_.try_emplace(symbol.name);
  if (inserted) it->second = demangle(symbol.name);
  return it->second;
}

AddressSymbol DwarfModuleSymbolizer::symbolize(uint64_t vaddr) {
  AddressSymbol out;
  const ElfSymbol* elf_symbol = symbol_at(vaddr);
  if (elf_symbol) {
    out.symbol = NativeSymbolInfo{
        demangled(*elf_symbol), elf_symbol->start,
        elf_symbol->size ? std::optional<uint64_t>(elf_symbol->size) : std::nullopt};
  }

  Dwarf_Addr bias = 0;
  Dwarf_Die* cudie = unit_at(vaddr, &bias);
  std::string leaf_file;
  uint32_t leaf_line = 0;
  if (!cudie) {
    frames_without_unit(out);
    return out;
  }
  const uint64_t pc = vaddr - bias;
  if (const LineTable* table = line_table(cudie, true)) {
    if (auto at = table->find(pc)) {
      if (at->file < table->files().size()) leaf_file = table->files()[at->file];
      if (at->line > 0 && at->line <= INT32_MAX) leaf_line = static_cast<uint32_t>(at->line);
    }
  } else if (Dwarf_Line* line = dwarf_getsrc_die(cudie, pc)) {
    int lineno = 0;
    const char* file = dwarf_linesrc(line, nullptr, nullptr);
    if (file) leaf_file = file;
    if (dwarf_lineno(line, &lineno) == 0 && lineno > 0) leaf_line = static_cast<uint32_t>(lineno);
  }

  DwarfUnitIndex& unit = unit_index(dwarf_dieoffset(cudie));
  std::vector<uint32_t> chain;
  unit.chain(pc, chain, [&](uint32_t node) { return unit.expand(node, dwarf_); });
  for (uint32_t node : chain) describe(unit, node, bias);
  frames_from_chain(unit, chain, leaf_file, leaf_line, pc, bias, out);
  return out;
}

void DwarfModuleSymbolizer::describe(DwarfUnitIndex& unit, uint32_t n, Dwarf_Addr bias) {
  UnitTree::Node& node = unit.nodes[n];
  if (node.described) return;
  node.described = true;
  Dwarf_Die die;
  if (!dwarf_offdie(dwarf_, node.die, &die)) return;
  FunctionAttributes attributes = function_attributes(&die);
  std::string name = linkage_name(attributes);
  // Only a physical function (the first of a chain) is a child of the unit's node.
  if (name.empty() && node.parent == 0) {
    // A C++ function without a linkage name (internal linkage): the ELF symbol at its entry
    // names it fully. At the entry, not at its lowest address, which may be its .cold part's
    // ("f() [clone .cold]"); and not at this address: the name must not depend on which
    // address described the node first.
    const ElfSymbol* at_start = symbol_at(node.entry + bias);
    if (at_start && at_start->start == node.entry + bias && at_start->name[0] == '_' &&
        at_start->name[1] == 'Z') {
      name = demangled(*at_start);
    }
  }
  if (name.empty() && attributes.named) {
    name = qualified(&*attributes.named).value_or(std::string());
  }
  node.name = unit.intern(std::move(name));
  node.file = unit.intern(decl_file(&attributes.decl_file, &die));
  Dwarf_Word decl_line = 0;
  if (attributes.decl_line.form && dwarf_formudata(&attributes.decl_line, &decl_line) == 0 &&
      decl_line > 0 && decl_line <= INT32_MAX) {
    node.decl_line = static_cast<uint32_t>(decl_line);
  }
  if (dwarf_tag(&die) == DW_TAG_inlined_subroutine) {
    node.call_line = udata_attr(&die, DW_AT_call_line);
    node.call_file = unit.intern(call_file(&unit.cu, &die));
  }
}

ModuleIndex::Module DwarfModuleSymbolizer::module_part() {
  ModuleIndex::Module m;
  m.has_dwarf = dwarf_ != nullptr;
  m.bias = dwarf_bias_;
  m.symbols.reserve(symbols().size());
  for (const ElfSymbol& s : symbols()) m.symbols.push_back({s.start, s.size, s.name});
  keep_symbol_names(m);  // the reader's names go with it
  Dwarf_Aranges* aranges = nullptr;
  size_t count = 0;
  m.aranges_usable = dwarf_ && dwarf_getaranges(dwarf_, &aranges, &count) == 0;
  if (!m.aranges_usable) return m;
  // unit_at() takes the arange's unit when libdwfl agrees. A range that overlaps no other, whose
  // start libdwfl places in its unit, is that unit's at every address (both search sorted
  // ranges). Any other is left to the reader: one where libdwfl disagrees (a discarded
  // function's range at address 0), and wherever ranges overlap or are empty.
  std::vector<ModuleIndex::Arange> ranges;
  for (size_t i = 0; i < count; ++i) {
    Dwarf_Addr addr = 0, bias = 0;
    Dwarf_Word length = 0;
    Dwarf_Off unit = 0;
    Dwarf_Arange* arange = dwarf_onearange(aranges, i);
    if (!arange || dwarf_getarangeinfo(arange, &addr, &length, &unit) != 0 ||
        addr + std::max<Dwarf_Word>(length, 1) < addr ||
        (!ranges.empty() && ranges.back().addr > addr)) {
      m.aranges_usable = false;
      return m;
    }
    Dwarf_Die* cudie = dwfl_module_addrdie(module_, addr + dwarf_bias_, &bias);
    const bool agrees = length > 0 && unit != ModuleIndex::kAskTheReader && cudie &&
                        bias == dwarf_bias_ && dwarf_dieoffset(cudie) == unit;
    ranges.push_back(
        {addr, std::max<Dwarf_Word>(length, 1), agrees ? unit : ModuleIndex::kAskTheReader});
  }
  // Where no arange is, unit_at() takes the unit of its own unlisted ranges (none overlap).
  for (const UnitRange& r : unlisted_units()) ranges.push_back({r.addr, r.end - r.addr, r.unit});
  std::stable_sort(ranges.begin(), ranges.end(),
                   [](const auto& a, const auto& b) { return a.addr < b.addr; });
  for (const ModuleIndex::Arange& r : ranges) {
    if (!m.aranges.empty() && m.aranges.back().addr + m.aranges.back().length > r.addr) {
      ModuleIndex::Arange& last = m.aranges.back();  // overlapping: the reader's, together
      last.length = std::max(last.addr + last.length, r.addr + r.length) - last.addr;
      last.unit = ModuleIndex::kAskTheReader;
      continue;
    }
    m.aranges.push_back(r);
  }
  return m;
}

void DwarfModuleSymbolizer::export_index(ModuleIndex& index) {
  if (!index.has_module()) index.set_module(module_part());
  if (!dwarf_ || !index.module()->aranges_usable) return;
  for (const auto& [offset, touched] : units_) {
    if (!touched || index.has_unit(offset)) continue;
    Dwarf_Die cudie;
    if (!dwarf_offdie(dwarf_, offset, &cudie)) continue;
    const LineTable* lines = line_table(&cudie, true);
    if (!lines) continue;  // libdw reads its lines: left to the reader
    DwarfUnitIndex whole;
    whole.build(&cudie, /*whole=*/true);
    for (uint32_t n = 1; n < whole.nodes.size(); ++n) describe(whole, n, dwarf_bias_);
    whole.forget_string_ids();
    index.add_unit(offset, ModuleIndex::Unit{static_cast<UnitTree&&>(whole),
                                             PackedLineTable::pack(*lines), std::nullopt});
  }
}

bool DwarfModuleSymbolizer::read_code(uint64_t vaddr, std::span<uint8_t> out) {
  if (!main_is_binary_ || out.empty()) return false;
  Dwarf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(module_, &bias);
  return read_loaded_code(elf, vaddr, out);
}

std::optional<unsigned> DwarfModuleSymbolizer::return_address_slot(uint64_t vaddr, bool aarch64) {
  Dwarf_Addr bias = 0;
  // .eh_frame first (as the binary alone answers it, binary_code.h), then .debug_frame: the
  // first CFI covering the address decides.
  Dwarf_CFI* eh = dwfl_module_eh_cfi(module_, &bias);
  if (auto slot = cfi_return_slot(eh, vaddr - bias, aarch64)) return *slot;
  Dwarf_CFI* debug = dwfl_module_dwarf_cfi(module_, &bias);
  if (auto slot = cfi_return_slot(debug, vaddr - bias, aarch64)) return *slot;
  return std::nullopt;
}

}  // namespace inprof::symbolicate
