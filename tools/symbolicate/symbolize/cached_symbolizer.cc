#include "symbolize/cached_symbolizer.h"

#include <utility>

namespace inprof::symbolicate {

SymbolCacheUse symbolize_with_cache(std::vector<ModuleAddresses>& modules,
                                    const std::vector<std::string>& keys, const SymbolCache* cache,
                                    unsigned jobs,
                                    const std::function<void(size_t, size_t)>& progress,
                                    size_t min_addresses_per_handle) {
  SymbolCacheUse use;
  if (!cache) {
    symbolize_in_parallel(modules, jobs, progress, min_addresses_per_handle);
    return use;
  }
  // Per module: what the cache knows, and the rest to symbolize (as a module of its own).
  std::vector<CachedSymbols> known(modules.size());
  std::vector<ModuleAddresses> rest;
  std::vector<size_t> rest_of;  // the module each of `rest` belongs to
  for (size_t m = 0; m < modules.size(); ++m) {
    ModuleAddresses& module = modules[m];
    if (!keys[m].empty()) known[m] = cache->load(keys[m]);
    ModuleAddresses todo;
    todo.files = module.files;
    for (uint64_t vaddr : module.vaddrs) {
      if (!known[m].count(vaddr)) todo.vaddrs.push_back(vaddr);
    }
    if (!keys[m].empty()) {
      use.hits += module.vaddrs.size() - todo.vaddrs.size();
      use.misses += todo.vaddrs.size();
    }
    if (todo.vaddrs.empty()) continue;  // all known: not even opened
    rest.push_back(std::move(todo));
    rest_of.push_back(m);
  }
  symbolize_in_parallel(rest, jobs, progress, min_addresses_per_handle);

  std::vector<ModuleAddresses*> done_by(modules.size(), nullptr);
  for (size_t r = 0; r < rest.size(); ++r) done_by[rest_of[r]] = &rest[r];
  for (size_t m = 0; m < modules.size(); ++m) {
    ModuleAddresses& module = modules[m];
    const size_t n = module.vaddrs.size();
    module.results.assign(n, AddressSymbol{});
    module.done.assign(n, 0);
    ModuleAddresses* computed = done_by[m];
    size_t k = 0, added = 0;  // computed->vaddrs is a sorted subsequence of module.vaddrs
    for (size_t i = 0; i < n; ++i) {
      const uint64_t vaddr = module.vaddrs[i];
      if (computed && k < computed->vaddrs.size() && computed->vaddrs[k] == vaddr) {
        if (computed->done[k]) {
          module.results[i] = computed->results[k];
          module.done[i] = 1;
          if (!keys[m].empty()) {
            known[m].emplace(vaddr, std::move(computed->results[k]));
            ++added;
          }
        }
        ++k;
        continue;
      }
      auto it = known[m].find(vaddr);
      if (it != known[m].end()) {
        module.results[i] = it->second;
        module.done[i] = 1;
      }
    }
    if (computed) {
      module.files.debug_image = computed->files.debug_image;
      module.handles = std::move(computed->handles);
    }
    if (added > 0) {
      std::string why;
      if (!cache->store(keys[m], known[m], &why)) use.problems.push_back(why);
    }
  }
  return use;
}

}  // namespace inprof::symbolicate
