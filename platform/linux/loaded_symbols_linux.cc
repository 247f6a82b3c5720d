// Names from the mapped dynamic symbol tables on Linux (lib/pull/loaded_symbols.h).
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <cstring>

#include "pull/loaded_symbols.h"

namespace inprof::internal {
namespace {

struct SymbolLookup {
  std::span<const uint64_t> addresses;
  std::vector<std::string>* names;
};

struct DynamicSymbolTables {
  const ElfW(Sym) * symbols = nullptr;
  const char* strings = nullptr;
  size_t strings_size = 0;
  size_t count = 0;
};

// The loader leaves the vDSO's dynamic entries unrelocated (file addresses); every other
// module's are run-time addresses.
uintptr_t dynamic_address(const dl_phdr_info* info, ElfW(Addr) value) {
  return value < info->dlpi_addr ? info->dlpi_addr + value : value;
}

// How many symbols DT_GNU_HASH lists: one past the last index any chain reaches.
size_t gnu_hash_symbol_count(const uint32_t* table) {
  const uint32_t buckets = table[0], first = table[1], bloom_words = table[2];
  const uint32_t* bucket = table + 4 + bloom_words * (sizeof(ElfW(Addr)) / 4);
  const uint32_t* chain = bucket + buckets;
  uint32_t last = 0;
  for (uint32_t b = 0; b < buckets; ++b) last = std::max(last, bucket[b]);
  if (last < first) return first;
  while ((chain[last - first] & 1) == 0) ++last;
  return last + 1;
}

bool dynamic_tables(const dl_phdr_info* info, DynamicSymbolTables* out) {
  const ElfW(Dyn)* dynamic = nullptr;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
      dynamic = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    }
  }
  if (!dynamic) return false;
  for (const ElfW(Dyn)* d = dynamic; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB:
        out->symbols = reinterpret_cast<const ElfW(Sym)*>(dynamic_address(info, d->d_un.d_ptr));
        break;
      case DT_STRTAB:
        out->strings = reinterpret_cast<const char*>(dynamic_address(info, d->d_un.d_ptr));
        break;
      case DT_STRSZ:
        out->strings_size = d->d_un.d_val;
        break;
      case DT_HASH:
        out->count = reinterpret_cast<const uint32_t*>(dynamic_address(info, d->d_un.d_ptr))[1];
        break;
      case DT_GNU_HASH:
        if (out->count == 0) {
          out->count = gnu_hash_symbol_count(
              reinterpret_cast<const uint32_t*>(dynamic_address(info, d->d_un.d_ptr)));
        }
        break;
      default:
        break;
    }
  }
  return out->symbols && out->strings && out->count > 0;
}

bool module_holds(const dl_phdr_info* info, uint64_t address) {
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    const uint64_t start = info->dlpi_addr + p.p_vaddr;
    if (p.p_type == PT_LOAD && address >= start && address - start < p.p_memsz) return true;
  }
  return false;
}

int name_in_module_symbols(dl_phdr_info* info, size_t, void* data) {
  auto* lookup = static_cast<SymbolLookup*>(data);
  std::vector<size_t> mine;
  for (size_t i = 0; i < lookup->addresses.size(); ++i) {
    if ((*lookup->names)[i].empty() && module_holds(info, lookup->addresses[i])) mine.push_back(i);
  }
  DynamicSymbolTables t;
  if (mine.empty() || !dynamic_tables(info, &t)) return 0;
  // The defined functions by start, then each address against the nearest few below it (aliases
  // share a start; a function inside another's range is rare): a name only where it contains it.
  std::vector<std::pair<uint64_t, const ElfW(Sym)*>> functions;
  for (size_t s = 0; s < t.count; ++s) {
    const ElfW(Sym)& sym = t.symbols[s];
    const unsigned type = ELF64_ST_TYPE(sym.st_info);
    if ((type == STT_FUNC || type == STT_GNU_IFUNC) && sym.st_shndx != SHN_UNDEF &&
        sym.st_size != 0 && sym.st_name < t.strings_size) {
      functions.emplace_back(info->dlpi_addr + sym.st_value, &sym);
    }
  }
  std::sort(functions.begin(), functions.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i : mine) {
    const uint64_t a = lookup->addresses[i];
    auto above = std::upper_bound(functions.begin(), functions.end(), a,
                                  [](uint64_t x, const auto& f) { return x < f.first; });
    for (int tries = 0; above != functions.begin() && tries < 8; ++tries) {
      --above;
      if (a - above->first < above->second->st_size) {
        const char* name = t.strings + above->second->st_name;
        (*lookup->names)[i].assign(name, strnlen(name, t.strings_size - above->second->st_name));
        break;
      }
    }
  }
  return 0;
}

}  // namespace

std::vector<std::string> name_loaded_addresses(std::span<const uint64_t> addresses) {
  std::vector<std::string> names(addresses.size());
  SymbolLookup lookup{addresses, &names};
  dl_iterate_phdr(name_in_module_symbols, &lookup);
  return names;
}

}  // namespace inprof::internal
