// Several unit files of a module index (module_index.h) in one file: a run that adds a dozen
// units creates one file and names it once per unit (hard links, symbol_cache.h), not a dozen
// files (each creation cost ~0.06-0.17 ms: ext4 allocating an inode, the bulk of writing a warm
// run's new units).
//
//   magic, version, key, count, per unit (its DIE offset, where its bytes start, their length),
//   checksum of all that; then each unit's own bytes (ModuleIndex::encode_unit: self-checked)
//
// A reader of <key>.<unit>.unit finds its unit in the directory and decodes those bytes alone; a
// damaged directory is a miss for every unit, a damaged unit only for itself.
#ifndef INPROF_TOOLS_SYMBOLICATE_UNIT_PACK_H_
#define INPROF_TOOLS_SYMBOLICATE_UNIT_PACK_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace inprof::symbolicate {

// `units`: (DIE offset, ModuleIndex::encode_unit's bytes) each; offsets distinct.
std::string encode_unit_pack(std::string_view key,
                             const std::vector<std::pair<uint64_t, std::string>>& units);
// Whether `bytes` begin as a pack (rather than as a single unit's file).
bool is_unit_pack(std::string_view bytes);
// The bytes of unit `unit` in the pack `bytes` of module `key`; nullopt when the pack is not
// intact, not `key`'s, or does not hold the unit.
std::optional<std::string_view> find_in_unit_pack(std::string_view key, uint64_t unit,
                                                  std::string_view bytes);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_UNIT_PACK_H_
