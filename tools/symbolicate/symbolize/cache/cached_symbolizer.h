// symbolize_in_parallel (parallel_symbolizer.h) behind the persistent symbol cache
// (symbol_cache.h): the addresses a module's cache file knows are taken from it, those its module
// index (module_index.h) can answer are answered from that, only the others are symbolized. A
// module whose addresses are all answered so is not opened at all. The results are
// the same as without the cache. Storing what was learnt is the caller's (SymbolCache::store),
// once it has also used the modules for the rest (the leaf fix-up's CFI, system-call sites).
#ifndef INPROF_TOOLS_SYMBOLICATE_CACHED_SYMBOLIZER_H_
#define INPROF_TOOLS_SYMBOLICATE_CACHED_SYMBOLIZER_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "symbolize/cache/symbol_cache.h"
#include "symbolize/parallel_symbolizer.h"

namespace inprof::symbolicate {

struct SymbolCacheUse {
  size_t hits = 0;     // addresses taken from the cache (either way)
  size_t indexed = 0;  // of which answered by the module index
  size_t misses = 0;   // addresses of cacheable modules that had to be symbolized
  size_t opened = 0;   // modules opened to symbolize what the cache did not know
  // Per module: what its cache file held, with what was symbolized here added; and whether
  // anything was (the file is then worth writing again).
  std::vector<CachedModule> known;
  std::vector<ModuleIndex> indexes;  // per module: its index as read (added to by the caller)
  std::vector<uint8_t> index_read;   // whether it was (it is read only when an address needs it)
  std::vector<uint8_t> learnt;
};

// `keys[i]` is modules[i]'s SymbolCache::key (empty: not cached). `cache` null: no cache at all.
SymbolCacheUse symbolize_with_cache(std::vector<ModuleAddresses>& modules,
                                    const std::vector<std::string>& keys, const SymbolCache* cache,
                                    unsigned jobs,
                                    const std::function<void(size_t, size_t)>& progress,
                                    size_t min_addresses_per_handle);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_CACHED_SYMBOLIZER_H_
