#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <unordered_map>

#include "dump/dump_records.h"
#include "symbolize/binary_code.h"
#include "symbolize/cache/module_index.h"
#include "symbolize/elf/cfi_slot.h"
#include "symbolize/elf/debug_image.h"
#include "symbolize/elf/elf_file.h"
#include "symbolize/elf/libdw_line_tables.h"
#include "symbolize/line_table.h"
#include "symbolize/macho/macho_symbolizer.h"
#include "symbolize/module_symbolizer.h"
#include "symbolize/unit_tree.h"

namespace inprof::symbolicate {
namespace {

// The attributes that place a function's or an inlined call's code, gathered in one pass.
struct CodeAttributes {
  Dwarf_Attribute low{}, high{};  // form 0: absent
  bool has_ranges = false;
};

int note_code_attribute(Dwarf_Attribute* attribute, void* arg) {
  auto* code = static_cast<CodeAttributes*>(arg);
  // The first of each, as dwarf_attr finds it.
  switch (dwarf_whatattr(attribute)) {
    case DW_AT_low_pc:
      if (!code->low.form) code->low = *attribute;
      break;
    case DW_AT_high_pc:
      if (!code->high.form) code->high = *attribute;
      break;
    case DW_AT_ranges:
      code->has_ranges = true;
      break;
    default:
      break;
  }
  return DWARF_CB_OK;
}

// DW_AT_high_pc is an address in these forms, an offset from DW_AT_low_pc in the others.
bool is_address_form(unsigned form) {
  switch (form) {
    case DW_FORM_addr:
    case DW_FORM_addrx:
    case DW_FORM_addrx1:
    case DW_FORM_addrx2:
    case DW_FORM_addrx3:
    case DW_FORM_addrx4:
    case DW_FORM_GNU_addr_index:
      return true;
    default:
      return false;
  }
}

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

// What describes a function: its DIE's own attributes first, then those of the DIEs it completes
// (DW_AT_abstract_origin, else DW_AT_specification), as dwarf_attr_integrate looks them up, but
// in one pass over each DIE's attributes instead of one per attribute and DIE.
struct FunctionAttributes {
  Dwarf_Attribute linkage{}, mips_linkage{}, decl_file{}, decl_line{};  // form 0: absent
  std::optional<Dwarf_Die> named;  // the first DIE of the chain with a DW_AT_name
};

struct OneDie {
  Dwarf_Attribute linkage{}, mips_linkage{}, decl_file{}, decl_line{}, origin{}, specification{};
  bool has_name = false;
};

int note_function_attribute(Dwarf_Attribute* attribute, void* arg) {
  auto* d = static_cast<OneDie*>(arg);
  Dwarf_Attribute* slot = nullptr;
  switch (dwarf_whatattr(attribute)) {
    case DW_AT_linkage_name:
      slot = &d->linkage;
      break;
    case DW_AT_MIPS_linkage_name:
      slot = &d->mips_linkage;
      break;
    case DW_AT_decl_file:
      slot = &d->decl_file;
      break;
    case DW_AT_decl_line:
      slot = &d->decl_line;
      break;
    case DW_AT_abstract_origin:
      slot = &d->origin;
      break;
    case DW_AT_specification:
      slot = &d->specification;
      break;
    case DW_AT_name:
      d->has_name = true;
      break;
    default:
      break;
  }
  if (slot && !slot->form) *slot = *attribute;  // the first, as dwarf_attr finds it
  return DWARF_CB_OK;
}

FunctionAttributes function_attributes(Dwarf_Die* die) {
  FunctionAttributes out;
  Dwarf_Die current = *die;
  for (int hop = 0; hop < 9; ++hop) {  // dwarf_attr_integrate's limit
    OneDie d;
    if (dwarf_getattrs(&current, note_function_attribute, &d, 0) != 1) break;
    for (auto [have, found] : {std::pair{&out.linkage, &d.linkage},
                               {&out.mips_linkage, &d.mips_linkage},
                               {&out.decl_file, &d.decl_file},
                               {&out.decl_line, &d.decl_line}}) {
      if (!have->form) *have = *found;
    }
    if (!out.named && d.has_name) out.named = current;
    Dwarf_Attribute* next = d.origin.form          ? &d.origin
                            : d.specification.form ? &d.specification
                                                   : nullptr;
    Dwarf_Die target;
    if (!next || !dwarf_formref_die(next, &target)) break;
    current = target;
  }
  return out;
}

std::string linkage_name(FunctionAttributes& attributes) {
  const char* linkage = dwarf_formstring(attributes.linkage.form ? &attributes.linkage : nullptr);
  if (!linkage) {
    linkage = dwarf_formstring(attributes.mips_linkage.form ? &attributes.mips_linkage : nullptr);
  }
  // Only a mangled name says more than DW_AT_name; a C function's linkage name is an asm label
  // (glibc's "__GI_memcpy" for memcpy), not what its source calls it.
  if (!linkage || linkage[0] != '_' || (linkage[1] != 'Z' && linkage[1] != 'R')) return {};
  return demangle(linkage);
}

uint32_t udata_attr(Dwarf_Die* die, unsigned name) {
  Dwarf_Attribute attr;
  Dwarf_Word value;
  if (dwarf_formudata(dwarf_attr(die, name, &attr), &value) != 0) return 0;
  return value > UINT32_MAX ? 0 : static_cast<uint32_t>(value);
}

// libdw's way (it decodes the unit's whole line program for its file table).
std::string libdw_call_file(Dwarf_Die* cudie, Dwarf_Die* inlined) {
  Dwarf_Attribute attr;
  Dwarf_Word index;
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &index) != 0) return {};
  Dwarf_Files* files;
  size_t count;
  if (dwarf_getsrcfiles(cudie, &files, &count) != 0 || index >= count) return {};
  const char* name = dwarf_filesrc(files, index, nullptr, nullptr);
  return name ? name : "";
}

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
  struct UnitIndex;
  struct ScopeIndex;

  // The ELF symbols, read (or taken from known_symbols_) on first use.
  const std::vector<ElfSymbol>& symbols();
  void load_symbols();
  // After a symbol without a size at `addr`: a nameless entry where its section ends.
  void add_section_end(const GElf_Sym& sym, uint64_t addr, GElf_Word shndx, Elf* elf);
  // The compilation unit whose address ranges hold `vaddr`, or null; *bias as libdwfl's.
  Dwarf_Die* unit_at(uint64_t vaddr, Dwarf_Addr* bias);
  // The ELF symbol containing `vaddr`, or null.
  const ElfSymbol* symbol_at(uint64_t vaddr);
  const std::string& demangled(const ElfSymbol& symbol);
  // The index of the compilation unit whose DIE is at `cu_offset`, built on first use.
  UnitIndex& unit_index(uint64_t cu_offset);
  // The unit's line program by our reader (null: libdw must answer), its rows decoded if asked.
  const LineTable* line_table(Dwarf_Die* cudie, bool with_rows);
  // The file of DW_AT_decl_file (through abstract origins and specifications), as
  // dwarf_decl_file names it.
  std::string decl_file(Dwarf_Attribute* decl_file, Dwarf_Die* die);
  std::string call_file(Dwarf_Die* cudie, Dwarf_Die* inlined);
  // Names and places the node `n` of `unit` (once).
  void describe(UnitIndex& unit, uint32_t n, Dwarf_Addr bias);
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
  std::unordered_map<uint64_t, std::unique_ptr<UnitIndex>> units_;    // by CU DIE offset
  std::shared_ptr<const KnownUnits> known_units_;                     // null: none
  std::unordered_map<uint64_t, Dwarf_Die> known_unit_dies_;           // by CU DIE offset
  std::unordered_map<uint64_t, std::unique_ptr<ScopeIndex>> scopes_;  // by CU DIE offset
  std::optional<LineSections> line_sections_;  // unset: every line question goes to libdw
  struct UnitLines {
    std::optional<LineTable> table;
    bool with_rows = false;
    bool failed = false;
  };
  std::unordered_map<uint64_t, UnitLines> line_tables_;  // by CU DIE offset
};

}  // namespace

// One compilation unit's functions as a tree (unit_tree.h), read from libdw. A function's inside
// (its inlined calls, nested blocks) is read the first time an address falls in it: a profile
// touches few of a big unit's functions, and walking every DIE of the unit was most of the cost.
struct DwarfModuleSymbolizer::UnitIndex : UnitTree {
  Dwarf_Die cu{};
  void build(Dwarf_Die* cudie, bool whole = false) {
    cu = *cudie;
    collect(cudie, 0, 0, whole);
    group(0);
  }

  // Reads the inside of the function at `node`.
  bool expand(uint32_t node, Dwarf* dwarf) {
    nodes[node].expanded = true;
    Dwarf_Die die;
    if (!dwarf_offdie(dwarf, nodes[node].die, &die)) return true;
    const size_t from = ranges.size();
    collect(&die, node, nodes[node].depth + 1, true);
    group(from);
    return true;
  }

  // Adds the functions and inlined calls under `parent`; with `inside`, also what is inside
  // them, else they are left to expand().
  void collect(Dwarf_Die* parent, uint32_t parent_node, int depth, bool inside) {
    if (depth > kMaxScopeDepth) return;
    Dwarf_Die child;
    if (dwarf_child(parent, &child) != 0) return;
    do {
      int tag = dwarf_tag(&child);
      switch (tag) {
        case DW_TAG_subprogram:
        case DW_TAG_inlined_subroutine: {
          uint32_t node = static_cast<uint32_t>(nodes.size());
          bool any = false;
          uint64_t first = 0;
          auto add = [&](uint64_t start, uint64_t end) {
            if (end <= start) return;
            ranges.push_back({parent_node, start, end, node});
            if (!any) first = start;
            any = true;
          };
          // What dwarf_ranges and dwarf_lowpc would say, from one pass over the attributes
          // (each of their lookups scans them again: most of this walk's cost).
          CodeAttributes code;
          dwarf_getattrs(&child, note_code_attribute, &code, 0);
          Dwarf_Addr entry = 0, high = 0;
          Dwarf_Word size = 0;
          const bool has_entry = code.low.form && dwarf_formaddr(&code.low, &entry) == 0;
          bool single = false;
          if (has_entry && code.high.form) {
            if (is_address_form(code.high.form)) {
              single = dwarf_formaddr(&code.high, &high) == 0;
            } else if (dwarf_formudata(&code.high, &size) == 0) {
              high = entry + size;
              single = true;
            }
          }
          if (single) {
            add(entry, high);
          } else if (code.has_ranges) {
            Dwarf_Addr base, start, end;
            ptrdiff_t off = 0;
            int guard = 0;
            while ((off = dwarf_ranges(&child, off, &base, &start, &end)) > 0 && ++guard < 4096) {
              add(start, end);
            }
          }
          if (!any) break;  // a declaration or an abstract instance: no code here
          Node n;
          n.die = dwarf_dieoffset(&child);
          n.parent = parent_node;
          // Without DW_AT_low_pc, DWARF's entry is the first listed range's start: for a
          // function GCC split, its hot part, listed before the .cold part it placed lower.
          n.entry = has_entry ? entry : first;
          n.depth = static_cast<uint16_t>(depth);
          n.expanded = inside;
          nodes.push_back(std::move(n));
          if (inside) collect(&child, node, depth + 1, true);
          break;
        }
        case DW_TAG_lexical_block:
        case DW_TAG_namespace:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
        case DW_TAG_module:
          collect(&child, parent_node, depth + 1, inside);
          break;
        default:
          break;
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }
};

// The enclosing namespaces and classes ("ns::Class::") of the subprogram DIEs of one unit that
// have any, found in one walk: names then need no search of the unit from its top (LTO builds
// refer to functions declared in other, large units all the time).
struct DwarfModuleSymbolizer::ScopeIndex {
  std::unordered_map<Dwarf_Off, std::string> prefixes;

  void collect(Dwarf_Die* parent, const std::string& prefix, int depth) {
    if (depth > kMaxScopeDepth) return;
    Dwarf_Die child;
    if (dwarf_child(parent, &child) != 0) return;
    do {
      int tag = dwarf_tag(&child);
      switch (tag) {
        case DW_TAG_subprogram:
          if (!prefix.empty()) prefixes.emplace(dwarf_dieoffset(&child), prefix);
          break;
        case DW_TAG_namespace:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
        case DW_TAG_module: {
          const char* name = dwarf_diename(&child);
          std::string label = name                      ? name
                              : tag == DW_TAG_namespace ? "(anonymous namespace)"
                                                        : "{unnamed type}";
          collect(&child, prefix + label + "::", depth + 1);
          break;
        }
        default:
          break;
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }
};

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
    slot = std::make_unique<ScopeIndex>();
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

DwarfModuleSymbolizer::UnitIndex& DwarfModuleSymbolizer::unit_index(uint64_t cu_offset) {
  auto& slot = units_[cu_offset];
  if (!slot) {
    slot = std::make_unique<UnitIndex>();
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

Dwarf_Die* DwarfModuleSymbolizer::unit_at(uint64_t vaddr, Dwarf_Addr* bias) {
  if (known_units_ && dwarf_) {
    // The unit libdwfl and the aranges agreed on when the index was made (export_index): the
    // same CU DIE, found without libdwfl's search. Elsewhere, libdwfl decides as below.
    const std::vector<KnownUnits::Range>& ranges = known_units_->ranges;
    const uint64_t pc = vaddr - dwarf_bias_;
    auto r = std::upper_bound(ranges.begin(), ranges.end(), pc,
                              [](uint64_t a, const KnownUnits::Range& k) { return a < k.addr; });
    if (r != ranges.begin() && pc - (r - 1)->addr < (r - 1)->length && (r - 1)->unit != 0) {
      auto [it, inserted] = known_unit_dies_.try_emplace((r - 1)->unit);
      if (inserted && !dwarf_offdie(dwarf_, (r - 1)->unit, &it->second)) {
        known_unit_dies_.erase(it);
      } else {
        *bias = dwarf_bias_;
        return &it->second;
      }
    }
  }
  Dwarf_Die* cudie = dwarf_ ? dwfl_module_addrdie(module_, vaddr, bias) : nullptr;
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

  UnitIndex& unit = unit_index(dwarf_dieoffset(cudie));
  std::vector<uint32_t> chain;
  unit.chain(pc, chain, [&](uint32_t node) { return unit.expand(node, dwarf_); });
  for (uint32_t node : chain) describe(unit, node, bias);
  frames_from_chain(unit, chain, leaf_file, leaf_line, pc, bias, out);
  return out;
}

void DwarfModuleSymbolizer::describe(UnitIndex& unit, uint32_t n, Dwarf_Addr bias) {
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

void DwarfModuleSymbolizer::export_index(ModuleIndex& index) {
  if (!index.has_module()) {
    ModuleIndex::Module m;
    m.has_dwarf = dwarf_ != nullptr;
    m.bias = dwarf_bias_;
    m.symbols.reserve(symbols().size());
    for (const ElfSymbol& s : symbols()) m.symbols.push_back({s.start, s.size, s.name});
    keep_symbol_names(m);  // the reader's names go with it
    Dwarf_Aranges* aranges = nullptr;
    size_t count = 0;
    m.aranges_usable = dwarf_ && dwarf_getaranges(dwarf_, &aranges, &count) == 0;
    for (size_t i = 0; m.aranges_usable && i < count; ++i) {
      // unit_at() takes the arange's unit when libdwfl agrees. A range that overlaps no other,
      // whose start libdwfl places in its unit, is that unit's at every address (both search
      // sorted ranges). Any other is left to the reader: one where libdwfl disagrees (a
      // discarded function's range at address 0), and wherever ranges overlap or are empty.
      Dwarf_Addr addr = 0, bias = 0;
      Dwarf_Word length = 0;
      Dwarf_Off unit = 0;
      Dwarf_Arange* arange = dwarf_onearange(aranges, i);
      if (!arange || dwarf_getarangeinfo(arange, &addr, &length, &unit) != 0 ||
          addr + std::max<Dwarf_Word>(length, 1) < addr ||
          (!m.aranges.empty() && m.aranges.back().addr > addr)) {
        m.aranges_usable = false;
        break;
      }
      Dwarf_Die* cudie = dwfl_module_addrdie(module_, addr + dwarf_bias_, &bias);
      const bool agrees = length > 0 && unit != ModuleIndex::kAskTheReader && cudie &&
                          bias == dwarf_bias_ && dwarf_dieoffset(cudie) == unit;
      const uint64_t end = addr + std::max<Dwarf_Word>(length, 1);
      if (!m.aranges.empty() && m.aranges.back().addr + m.aranges.back().length > addr) {
        ModuleIndex::Arange& last = m.aranges.back();  // overlapping: the reader's, together
        last.length = std::max(last.addr + last.length, end) - last.addr;
        last.unit = ModuleIndex::kAskTheReader;
        continue;
      }
      m.aranges.push_back({addr, end - addr, agrees ? unit : ModuleIndex::kAskTheReader});
    }
    if (!m.aranges_usable) m.aranges.clear();
    index.set_module(std::move(m));
  }
  if (!dwarf_ || !index.module()->aranges_usable) return;
  for (const auto& [offset, touched] : units_) {
    if (!touched || index.has_unit(offset)) continue;
    Dwarf_Die cudie;
    if (!dwarf_offdie(dwarf_, offset, &cudie)) continue;
    const LineTable* lines = line_table(&cudie, true);
    if (!lines) continue;  // libdw reads its lines: left to the reader
    UnitIndex whole;
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
