#include "module_symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace inprof::symbolicate {
namespace {

constexpr int kMaxScopeDepth = 64;  // corrupt DWARF must not recurse forever

char* debuginfo_path = nullptr;  // libdwfl's default search path
const Dwfl_Callbacks kCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

std::string hex(const uint8_t* p, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += kDigits[p[i] >> 4];
    s += kDigits[p[i] & 15];
  }
  return s;
}

std::string linkage_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  const char* linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
  if (!linkage) {
    linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
  }
  return linkage ? demangle(linkage) : std::string();
}

// "ns::Class::name" from DW_AT_name and the enclosing namespaces and classes, for functions
// without a linkage name (GCC omits it on some members and on local functions).
std::string qualified_name(Dwarf_Die* die) {
  Dwarf_Die named = *die;
  // Follow abstract_origin / specification to the DIE that carries the name.
  for (int hop = 0; hop < 8 && !dwarf_hasattr(&named, DW_AT_name); ++hop) {
    Dwarf_Attribute attr;
    Dwarf_Attribute* ref = dwarf_attr(&named, DW_AT_abstract_origin, &attr);
    if (!ref) ref = dwarf_attr(&named, DW_AT_specification, &attr);
    if (!ref || !dwarf_formref_die(ref, &named)) return {};
  }
  const char* base = dwarf_diename(&named);
  if (!base) return {};
  std::string name = base;
  Dwarf_Die* scopes = nullptr;
  int n = dwarf_getscopes_die(&named, &scopes);
  for (int i = 1; i < n; ++i) {  // scopes[0] is the DIE itself
    int tag = dwarf_tag(&scopes[i]);
    if (tag != DW_TAG_namespace && tag != DW_TAG_class_type && tag != DW_TAG_structure_type &&
        tag != DW_TAG_union_type) {
      continue;
    }
    const char* scope = dwarf_diename(&scopes[i]);
    std::string label = scope                              ? scope
                        : tag == DW_TAG_namespace          ? "(anonymous namespace)"
                        : name.rfind("operator()", 0) == 0 ? "{lambda}"
                                                           : "{unnamed type}";
    name = label + "::" + name;
  }
  std::free(scopes);
  return name;
}

uint32_t udata_attr(Dwarf_Die* die, unsigned name) {
  Dwarf_Attribute attr;
  Dwarf_Word value;
  if (dwarf_formudata(dwarf_attr(die, name, &attr), &value) != 0) return 0;
  return value > UINT32_MAX ? 0 : static_cast<uint32_t>(value);
}

std::string call_file(Dwarf_Die* cudie, Dwarf_Die* inlined) {
  Dwarf_Attribute attr;
  Dwarf_Word index;
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &index) != 0) return {};
  Dwarf_Files* files;
  size_t count;
  if (dwarf_getsrcfiles(cudie, &files, &count) != 0 || index >= count) return {};
  const char* name = dwarf_filesrc(files, index, nullptr, nullptr);
  return name ? name : "";
}

bool has_pc_attributes(Dwarf_Die* die) {
  return dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges);
}

// Collects the concrete function scopes containing `pc`, outermost first: the subprogram, then
// each inlined_subroutine nested in it.
bool find_function_chain(Dwarf_Die* parent, Dwarf_Addr pc, std::vector<Dwarf_Die>& chain,
                         int depth) {
  if (depth > kMaxScopeDepth) return false;
  Dwarf_Die child;
  if (dwarf_child(parent, &child) != 0) return false;
  do {
    int tag = dwarf_tag(&child);
    switch (tag) {
      case DW_TAG_subprogram:
      case DW_TAG_inlined_subroutine:
        if (dwarf_haspc(&child, pc) > 0) {
          Dwarf_Die scope = child;  // the recursion may reallocate `chain`
          chain.push_back(scope);
          find_function_chain(&scope, pc, chain, depth + 1);
          return true;
        }
        break;
      case DW_TAG_lexical_block:
        // A block without ranges may still hold inlined calls; one with ranges must contain pc.
        if (has_pc_attributes(&child) ? dwarf_haspc(&child, pc) > 0 : true) {
          if (find_function_chain(&child, pc, chain, depth + 1)) return true;
        }
        break;
      case DW_TAG_namespace:
      case DW_TAG_class_type:
      case DW_TAG_structure_type:
      case DW_TAG_union_type:
      case DW_TAG_module:
        if (find_function_chain(&child, pc, chain, depth + 1)) return true;
        break;
      default:
        break;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

}  // namespace

std::string demangle(const char* name) {
  if (!name) return {};
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !out) return name;
  std::string result(out);
  std::free(out);
  return result;
}

std::unique_ptr<ModuleSymbolizer> ModuleSymbolizer::open(const internal::ModuleRecord& module,
                                                         std::string* why) {
  const std::string& path = module.path;
  // Only regular files: a FIFO would block, /dev/zero would never end.
  struct stat st;
  if (path.empty() || path[0] == '[') {
    *why = "no file for this module";
    return nullptr;
  }
  if (::stat(path.c_str(), &st) != 0) {
    *why = std::string("cannot open: ") + std::strerror(errno);
    return nullptr;
  }
  if (!S_ISREG(st.st_mode)) {
    *why = "not a regular file";
    return nullptr;
  }
  // O_NONBLOCK: should the path be swapped for a FIFO after stat, open must not wait.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *why = std::string("cannot open: ") + std::strerror(errno);
    return nullptr;
  }
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    *why = "not a regular file";
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
  Dwfl_Module* mod = dwfl_report_elf(dwfl, path.c_str(), path.c_str(), fd, 0, true);
  if (!mod) {
    *why = std::string("not a usable ELF file (") + dwfl_errmsg(-1) + ")";
    ::close(fd);  // not consumed on failure
    dwfl_end(dwfl);
    return nullptr;
  }
  dwfl_report_end(dwfl, nullptr, nullptr);

  if (!module.build_id.empty()) {
    GElf_Addr bias;
    dwfl_module_getelf(mod, &bias);  // the build-id is read with the ELF file
    const unsigned char* bits = nullptr;
    GElf_Addr id_vaddr;
    int n = dwfl_module_build_id(mod, &bits, &id_vaddr);
    std::string expected = hex(module.build_id.data(), module.build_id.size());
    std::string found = n > 0 ? hex(bits, static_cast<size_t>(n)) : std::string();
    if (found != expected) {
      *why = "build-id mismatch: the dump has " + expected + ", the file has " +
             (found.empty() ? std::string("none") : found);
      dwfl_end(dwfl);
      return nullptr;
    }
  }
  return std::unique_ptr<ModuleSymbolizer>(new ModuleSymbolizer(dwfl, mod));
}

ModuleSymbolizer::ModuleSymbolizer(Dwfl* dwfl, Dwfl_Module* module) : dwfl_(dwfl), module_(module) {
  Dwarf_Addr bias;
  has_dwarf_ = dwfl_module_getdwarf(module_, &bias) != nullptr;
}

ModuleSymbolizer::~ModuleSymbolizer() { dwfl_end(dwfl_); }

const AddressSymbol& ModuleSymbolizer::lookup(uint64_t vaddr) {
  auto it = cache_.find(vaddr);
  if (it != cache_.end()) return it->second;
  return cache_.emplace(vaddr, symbolize(vaddr)).first->second;
}

AddressSymbol ModuleSymbolizer::symbolize(uint64_t vaddr) {
  AddressSymbol out;

  // The ELF symbol: names the native symbol, and the function when there is no DWARF.
  GElf_Off offset = 0;
  GElf_Sym sym;
  const char* sym_name =
      dwfl_module_addrinfo(module_, vaddr, &offset, &sym, nullptr, nullptr, nullptr);
  if (sym_name && *sym_name) {
    out.symbol =
        NativeSymbolInfo{demangle(sym_name), vaddr - offset,
                         sym.st_size ? std::optional<uint64_t>(sym.st_size) : std::nullopt};
  }

  // The line at the address itself (innermost level).
  std::string leaf_file;
  uint32_t leaf_line = 0;
  if (Dwfl_Line* line = dwfl_module_getsrc(module_, vaddr)) {
    int lineno = 0;
    const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
    if (file) leaf_file = file;
    if (lineno > 0) leaf_line = static_cast<uint32_t>(lineno);
  }

  Dwarf_Addr bias = 0;
  Dwarf_Die* cudie = dwfl_module_addrdie(module_, vaddr, &bias);
  std::vector<Dwarf_Die> chain;
  if (cudie) {
    chain.reserve(8);
    find_function_chain(cudie, vaddr - bias, chain, 0);
  }
  for (size_t i = 0; i < chain.size(); ++i) {
    SourceFrame f;
    f.function = linkage_name(&chain[i]);
    if (f.function.empty() && i == 0 && out.symbol) {
      // The ELF symbol names the physical function fully when it starts where the DWARF
      // function does.
      Dwarf_Addr low = 0;
      if ((dwarf_lowpc(&chain[0], &low) == 0 || dwarf_entrypc(&chain[0], &low) == 0) &&
          low + bias == out.symbol->vaddr) {
        f.function = out.symbol->name;
      }
    }
    if (f.function.empty()) f.function = qualified_name(&chain[i]);
    if (f.function.empty() && i == 0 && out.symbol) f.function = out.symbol->name;
    if (f.function.empty()) f.function = "<unknown>";
    const char* decl_file = dwarf_decl_file(&chain[i]);
    int decl_line = 0;
    if (dwarf_decl_line(&chain[i], &decl_line) == 0 && decl_line > 0) {
      f.decl_line = static_cast<uint32_t>(decl_line);
    }
    bool innermost = i + 1 == chain.size();
    if (innermost) {
      f.line = leaf_line;
      f.file = decl_file ? decl_file : leaf_file;
    } else {
      // The line executing in an outer level is where it calls the next level in.
      f.line = udata_attr(&chain[i + 1], DW_AT_call_line);
      f.file = decl_file ? decl_file : call_file(cudie, &chain[i + 1]);
    }
    out.frames.push_back(std::move(f));
  }

  if (out.frames.empty() && out.symbol) {
    out.frames.push_back(SourceFrame{out.symbol->name, leaf_file, 0, leaf_line});
  }
  if (!out.symbol && !chain.empty()) {
    // No ELF symbol (stripped symtab): describe the physical function from DWARF.
    Dwarf_Addr low = 0, high = 0;
    if (dwarf_lowpc(&chain[0], &low) == 0 || dwarf_entrypc(&chain[0], &low) == 0) {
      NativeSymbolInfo s{out.frames[0].function, low + bias, std::nullopt};
      if (dwarf_highpc(&chain[0], &high) == 0 && high > low) s.size = high - low;
      out.symbol = s;
    }
  }
  return out;
}

std::optional<unsigned> ModuleSymbolizer::x86_64_return_address_slot(uint64_t vaddr) {
  constexpr uint64_t kRsp = 7;
  Dwarf_Addr bias = 0;
  Dwarf_CFI* cfis[2];
  Dwarf_Addr biases[2];
  cfis[0] = dwfl_module_eh_cfi(module_, &bias);
  biases[0] = bias;
  cfis[1] = dwfl_module_dwarf_cfi(module_, &bias);
  biases[1] = bias;
  for (int i = 0; i < 2; ++i) {
    if (!cfis[i]) continue;
    Dwarf_Frame* frame = nullptr;
    if (dwarf_cfi_addrframe(cfis[i], vaddr - biases[i], &frame) != 0) continue;
    Dwarf_Op* ops = nullptr;
    size_t nops = 0;
    std::optional<unsigned> slot;
    if (dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops == 1) {
      uint64_t reg = ~0ull;
      int64_t off = 0;
      if (ops[0].atom == DW_OP_bregx) {
        reg = ops[0].number;
        off = static_cast<int64_t>(ops[0].number2);
      } else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
        reg = ops[0].atom - DW_OP_breg0;
        off = static_cast<int64_t>(ops[0].number);
      }
      if (reg == kRsp && off >= 8 && off % 8 == 0 && (off - 8) / 8 <= 255) {
        slot = static_cast<unsigned>((off - 8) / 8);
      }
    }
    std::free(frame);
    return slot;  // the first CFI covering the address decides
  }
  return std::nullopt;
}

}  // namespace inprof::symbolicate
