// Symbolizes many addresses of many modules on several threads. libdw handles are not
// thread-safe, so each thread opens its own ModuleSymbolizer for the modules it works on. A
// module with many addresses is split between threads by compilation unit, so that no unit is
// parsed twice; a module's debug sections are inflated once for all its handles. The results do
// not depend on the number of threads.
#ifndef INPROF_TOOLS_SYMBOLICATE_PARALLEL_SYMBOLIZER_H_
#define INPROF_TOOLS_SYMBOLICATE_PARALLEL_SYMBOLIZER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "symbolize/debug_file_locator.h"
#include "symbolize/module_symbolizer.h"

namespace inprof::symbolicate {

struct ModuleAddresses {
  ModuleFiles files;
  std::vector<uint64_t> vaddrs;  // ELF virtual addresses, sorted, unique
  // Handed to every handle opened for these addresses (ModuleSymbolizer::use_known_units).
  std::shared_ptr<const KnownUnits> known_units;
  // Likewise (ModuleSymbolizer::use_known_symbols).
  std::shared_ptr<const KnownSymbols> known_symbols;
  std::vector<AddressSymbol> results;  // filled: one per address
  std::vector<uint8_t> done;           // 1 where results[i] is valid
  // The handles that did the work, kept (not freed by the threads as they finish, which took
  // ~10 ms of libdw's and our unit data on python3.11) until the owner frees or abandons them.
  std::vector<std::unique_ptr<ModuleSymbolizer>> handles;
};

// By default a module is split between threads only when it has at least this many addresses
// (below, a second handle's set-up, ~10 ms, would cost more than it saves).
inline constexpr size_t kMinAddressesPerHandle = 1024;

// `jobs` 0 means one per CPU. `progress(done, total)` is called on the calling thread from time
// to time while the work runs (null: not at all).
void symbolize_in_parallel(std::vector<ModuleAddresses>& modules, unsigned jobs,
                           const std::function<void(size_t, size_t)>& progress,
                           size_t min_addresses_per_handle = kMinAddressesPerHandle);

// The number of threads `jobs` stands for.
unsigned effective_jobs(unsigned jobs);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_PARALLEL_SYMBOLIZER_H_
