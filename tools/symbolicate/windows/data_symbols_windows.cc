// symbolicate built for Windows reads no ELF file: a lock a Linux dump's thread waits on stays
// named by its address there (data_symbols.h).
#include "symbolize/elf/data_symbols.h"

namespace inprof::symbolicate {

DataSymbols DataSymbols::load(const std::vector<std::string>& /*paths*/) { return {}; }

void DataSymbols::read_file(const std::string& /*path*/) {}

std::optional<DataSymbols::Found> DataSymbols::find(uint64_t /*vaddr*/) const {
  return std::nullopt;
}

}  // namespace inprof::symbolicate
