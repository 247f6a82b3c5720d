// The bytes of one file of the symbol cache (symbol_cache.h): what one module's addresses were
// symbolized to, keyed by the module's build-id. Decoding checks everything (magic, format
// version, key, lengths, a checksum of the whole): a damaged or foreign file decodes to nothing,
// never to wrong names.
//
// A file is one record, or one followed by records appended since, each holding only what a
// later run learnt (so that a warm run does not re-encode and rewrite the whole module). Every
// record is checked alike; decoding stops at the first that is not intact (a write cut short, or
// still under way in another process): what it and any after it hold is a miss.
//
// A run wants some of a module's addresses; the others are checked with their record but left
// undecoded (their names made into strings and put in a map was most of reading the file), and
// decoded only if asked for after all (CachedModule::find_symbol).
#ifndef INPROF_TOOLS_SYMBOLICATE_SYMBOL_CACHE_FILE_H_
#define INPROF_TOOLS_SYMBOLICATE_SYMBOL_CACHE_FILE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "symbolize/module_symbolizer.h"

namespace inprof::symbolicate {

// Bumped whenever the encoding, or what the symbolizer makes of an address, changes: files of
// another version are never read. It names the cache's directory (DIR/v<version>), so a bump
// leaves every older file (.sym, .idx, .unit, .img) unread, to be evicted in time.
// 2: the .sym's checksum is byte_io.h's fast_checksum (FNV-1a went a byte at a time).
// 3: no address past the end of a size-less symbol's section is named after it (PLT stubs were
// "_init"): what version 2 cached may hold such names.
// 4: the units of modules without .debug_aranges (clang's) are found, with their files and
// lines: version 3 cached their addresses without.
inline constexpr uint32_t kSymbolCacheVersion = 4;

// The file a module was read from, as it was: what appending to it needs (SymbolCache::store).
struct SymbolFileOrigin {
  uint64_t device = 0, inode = 0;
  uint64_t intact_bytes = 0;  // 0: not read from a file
  uint32_t records = 0;       // the first and those appended
};

// What is known of one module, by the module's own virtual address.
struct CachedModule {
  // Those decoded (ModuleSymbolizer::symbolize); with find_symbol, those left undecoded too.
  std::unordered_map<uint64_t, AddressSymbol> symbols;
  // ModuleSymbolizer::return_address_slot at a leaf (the leaf fix-up's CFI look-up).
  std::unordered_map<uint64_t, std::optional<unsigned>> return_slots;
  // Whether the instruction that ends at the address is a system call (syscall_site.h); nothing
  // when the code could not be read.
  std::unordered_map<uint64_t, std::optional<bool>> syscall_sites;
  bool empty() const {
    return symbols.empty() && undecoded.empty() && return_slots.empty() && syscall_sites.empty();
  }

  // The symbol of `vaddr`, decoded now if it was left undecoded; null if the file has none.
  const AddressSymbol* find_symbol(uint64_t vaddr);
  // Every entry left undecoded decoded (what writing the module whole needs).
  void decode_all();

  // An entry of the file not decoded yet: where it starts (just after its address) in the
  // file's bytes, and the string table of its record.
  struct Undecoded {
    uint64_t vaddr;
    uint32_t record;
    size_t at;
  };
  std::vector<Undecoded> undecoded;  // by address; of one address, the earliest record's first
  std::vector<std::vector<std::string_view>> record_strings;  // views into `file`
  std::shared_ptr<const char> file_owner;                     // keeps `file`'s bytes
  std::string_view file;

  // Adds what a run learnt, remembered apart too: what was read is not written again.
  const AddressSymbol& learn_symbol(uint64_t vaddr, AddressSymbol symbol);
  void learn_return_slot(uint64_t vaddr, std::optional<unsigned> slot);
  void learn_syscall_site(uint64_t vaddr, std::optional<bool> site);
  // Only what was learnt: the record to append.
  CachedModule learnt_part() const;
  bool learnt_any() const {
    return !learnt_symbols.empty() || !learnt_return_slots.empty() || !learnt_syscall_sites.empty();
  }

  std::vector<uint64_t> learnt_symbols, learnt_return_slots, learnt_syscall_sites;  // by address
  SymbolFileOrigin origin;  // set by SymbolCache::load
};

// One record of `module` (all of it; `key` names the module, build-id and the files read: it is
// stored and checked). A file written whole is one record; a record appended to a file adds its
// entries to those before.
std::string encode_symbol_cache(std::string_view key, const CachedModule& module);
// nullopt when `bytes` does not start with a complete, intact record of this version for `key`;
// else its entries and those of the intact records after it (origin.intact_bytes says how far
// they go, origin.records how many). With `wanted` (sorted addresses) only their symbols are
// decoded, the others checked and left for find_symbol: `owner` then keeps `bytes` (without
// one, `bytes` must outlive the result, which points into them).
std::optional<CachedModule> decode_symbol_cache(std::string_view key, std::string_view bytes,
                                                const std::vector<uint64_t>* wanted = nullptr,
                                                std::shared_ptr<const char> owner = nullptr);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_SYMBOL_CACHE_FILE_H_
