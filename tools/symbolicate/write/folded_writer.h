// Folded stacks ("root;caller;leaf COUNT" lines), the input of flamegraph.pl, inferno, speedscope
// and most other flame graph tools.
#ifndef INPROF_TOOLS_SYMBOLICATE_FOLDED_WRITER_H_
#define INPROF_TOOLS_SYMBOLICATE_FOLDED_WRITER_H_

#include <cstdio>

#include "convert/profile_builder.h"

namespace inprof::symbolicate {

// What a folded line's count is (symbolicate --folded-weight).
enum class FoldedWeight {
  kSamples,         // CPU samples; idle ones (Idle leaf category) left out
  kAllocatedBytes,  // the estimated bytes of the sampled allocations made at the stack
  kRetainedBytes,   // the same, of those never freed (the viewer's "Retained Memory")
};

// One line per distinct stack per thread, the thread's name as the root frame, lines sorted.
// By samples, those taken while the thread was idle are left out: a flame graph shows where the
// time on CPU went. By bytes, a stack is an allocation's, under the thread that allocated; an
// allocation without a stack is left out, and so is a line of 0. False if a write failed.
bool write_folded_stacks(const ProfileBuilder& profile, std::FILE* out,
                         FoldedWeight weight = FoldedWeight::kSamples);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_FOLDED_WRITER_H_
