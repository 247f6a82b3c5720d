// Names for code addresses from the symbol tables the process has mapped (each module's dynamic
// symbol table, which the loader maps; never a file opened): pull mode's /debug/pprof/symbol,
// which `go tool pprof` asks when it cannot name a module's addresses itself. An address is
// named only when it lies inside a function symbol's [start, start + size): a function the table
// does not list (a static one, in a program not linked with -rdynamic) stays unnamed, never
// given its neighbour's name. Read under the loader's lock, so that no module is unloaded while
// its table is read (platform/<os>/loaded_symbols_<os>.cc).
#ifndef INPROF_LIB_PULL_LOADED_SYMBOLS_H_
#define INPROF_LIB_PULL_LOADED_SYMBOLS_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace inprof::internal {

// One name per address (empty: unnamed), as the symbol table writes it (mangled).
std::vector<std::string> name_loaded_addresses(std::span<const uint64_t> addresses);

}  // namespace inprof::internal

#endif  // INPROF_LIB_PULL_LOADED_SYMBOLS_H_
