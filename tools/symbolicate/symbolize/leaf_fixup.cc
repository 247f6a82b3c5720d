#include "symbolize/leaf_fixup.h"

namespace inprof::symbolicate {

std::optional<uint64_t> missing_leaf_caller(std::span<const uint64_t> frames,
                                            std::span<const internal::LeafCandidate> candidates,
                                            std::optional<unsigned> return_slot) {
  if (frames.empty() || !return_slot) return std::nullopt;
  for (const internal::LeafCandidate& c : candidates) {
    if (c.slot != *return_slot) continue;
    // The walk already found this caller: the leaf had a frame after all.
    if (frames.size() >= 2 && frames[1] == c.value) return std::nullopt;
    return c.value;
  }
  return std::nullopt;
}

}  // namespace inprof::symbolicate
