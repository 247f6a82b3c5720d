// The bytes of one file of the symbol cache (symbol_cache.h): what one module's addresses were
// symbolized to, keyed by the module's build-id. Decoding checks everything (magic, format
// version, key, lengths, a checksum of the whole): a damaged or foreign file decodes to nothing,
// never to wrong names.
#ifndef INPROF_TOOLS_SYMBOLICATE_SYMBOL_CACHE_FILE_H_
#define INPROF_TOOLS_SYMBOLICATE_SYMBOL_CACHE_FILE_H_

#include <cstdint>
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
inline constexpr uint32_t kSymbolCacheVersion = 2;

// What is known of one module, by the module's own virtual address.
struct CachedModule {
  std::unordered_map<uint64_t, AddressSymbol> symbols;  // ModuleSymbolizer::symbolize
  // ModuleSymbolizer::return_address_slot at a leaf (the leaf fix-up's CFI look-up).
  std::unordered_map<uint64_t, std::optional<unsigned>> return_slots;
  // Whether the instruction that ends at the address is a system call (syscall_site.h); nothing
  // when the code could not be read.
  std::unordered_map<uint64_t, std::optional<bool>> syscall_sites;
  bool empty() const { return symbols.empty() && return_slots.empty() && syscall_sites.empty(); }
};

// `key` names the module (build-id and the files read); it is stored and checked.
std::string encode_symbol_cache(std::string_view key, const CachedModule& module);
// nullopt when `bytes` is not a complete, intact file of this version for `key`.
std::optional<CachedModule> decode_symbol_cache(std::string_view key, std::string_view bytes);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_SYMBOL_CACHE_FILE_H_
