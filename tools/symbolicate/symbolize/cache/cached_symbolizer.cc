#include "symbolize/cache/cached_symbolizer.h"

#include <utility>

namespace inprof::symbolicate {

SymbolCacheUse symbolize_with_cache(std::vector<ModuleAddresses>& modules,
                                    const std::vector<std::string>& keys, const SymbolCache* cache,
                                    unsigned jobs,
                                    const std::function<void(size_t, size_t)>& progress,
                                    size_t min_addresses_per_handle) {
  SymbolCacheUse use;
  use.known.resize(modules.size());
  use.learnt.assign(modules.size(), 0);
  use.indexes.resize(modules.size());
  use.index_read.assign(modules.size(), 0);
  if (!cache) {
    for (const ModuleAddresses& module : modules) use.opened += !module.vaddrs.empty();
    symbolize_in_parallel(modules, jobs, progress, min_addresses_per_handle);
    return use;
  }
  // Per module: what the cache knows, and the rest to symbolize (as a module of its own).
  std::vector<ModuleAddresses> rest;
  std::vector<size_t> rest_of;  // the module each of `rest` belongs to
  for (size_t m = 0; m < modules.size(); ++m) {
    ModuleAddresses& module = modules[m];
    auto& known = use.known[m].symbols;
    // Only the symbols of this dump's addresses decoded (module.vaddrs is sorted).
    if (!keys[m].empty()) use.known[m] = cache->load(keys[m], &module.vaddrs);
    ModuleAddresses todo;
    todo.files = module.files;
    uint8_t& index_read = use.index_read[m];
    for (uint64_t vaddr : module.vaddrs) {
      if (known.count(vaddr)) continue;
      if (!keys[m].empty() && !index_read) {  // read only when an address needs it
        use.indexes[m] = cache->load_index(keys[m]);
        index_read = 1;
      }
      if (std::optional<AddressSymbol> answer = use.indexes[m].symbolize(vaddr)) {
        use.known[m].learn_symbol(vaddr, std::move(*answer));
        use.learnt[m] = 1;
        ++use.indexed;
        continue;
      }
      todo.vaddrs.push_back(vaddr);
    }
    if (!keys[m].empty()) {
      use.hits += module.vaddrs.size() - todo.vaddrs.size();
      use.misses += todo.vaddrs.size();
    }
    if (todo.vaddrs.empty()) continue;  // all known: not even opened
#if !defined(_WIN32)
    if (!keys[m].empty()) todo.files.image_cache = cache->image_path(keys[m]);
#endif
    if (index_read) {
      todo.known_units = use.indexes[m].known_units();
      todo.known_symbols = use.indexes[m].known_symbols();
    }
    rest.push_back(std::move(todo));
    rest_of.push_back(m);
  }
  use.opened = rest.size();
  symbolize_in_parallel(rest, jobs, progress, min_addresses_per_handle);

  std::vector<ModuleAddresses*> computed_for(modules.size(), nullptr);
  for (size_t r = 0; r < rest.size(); ++r) computed_for[rest_of[r]] = &rest[r];
  for (size_t m = 0; m < modules.size(); ++m) {
    ModuleAddresses& module = modules[m];
    auto& known = use.known[m].symbols;
    const size_t n = module.vaddrs.size();
    module.results.assign(n, AddressSymbol{});
    module.done.assign(n, 0);
    ModuleAddresses* computed = computed_for[m];
    size_t k = 0;  // computed->vaddrs is a sorted subsequence of module.vaddrs
    for (size_t i = 0; i < n; ++i) {
      const uint64_t vaddr = module.vaddrs[i];
      if (computed && k < computed->vaddrs.size() && computed->vaddrs[k] == vaddr) {
        if (computed->done[k]) {
          module.results[i] = computed->results[k];
          module.done[i] = 1;
          if (!keys[m].empty()) {
            use.known[m].learn_symbol(vaddr, std::move(computed->results[k]));
            use.learnt[m] = 1;
          }
        }
        ++k;
        continue;
      }
      auto it = known.find(vaddr);
      if (it != known.end()) {
        module.results[i] = it->second;
        module.done[i] = 1;
      }
    }
    if (computed) {
      module.files.debug_image = computed->files.debug_image;
      module.handles = std::move(computed->handles);
    }
  }
  return use;
}

}  // namespace inprof::symbolicate
