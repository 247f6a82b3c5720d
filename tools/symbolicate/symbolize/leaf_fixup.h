// The leaf fix-up for frame-pointer walks (x86-64). GCC gives leaf functions no frame, so a walk
// that starts at the leaf's RBP skips the leaf's caller. The sampler recorded the stack words that
// look like code addresses; the leaf's CFI says which slot holds its return address.
#ifndef INPROF_TOOLS_SYMBOLICATE_LEAF_FIXUP_H_
#define INPROF_TOOLS_SYMBOLICATE_LEAF_FIXUP_H_

#include <cstdint>
#include <optional>
#include <span>

#include "dump/dump_records.h"

namespace inprof::symbolicate {

// The caller to insert right after frames[0], if any: the candidate at `return_slot` (the slot
// the leaf's CFI designates) when it is not already frames[1].
std::optional<uint64_t> missing_leaf_caller(std::span<const uint64_t> frames,
                                            std::span<const internal::LeafCandidate> candidates,
                                            std::optional<unsigned> return_slot);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_LEAF_FIXUP_H_
