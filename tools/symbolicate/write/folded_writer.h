// Folded stacks ("root;caller;leaf COUNT" lines), the input of flamegraph.pl, inferno, speedscope
// and most other flame graph tools.
#ifndef INPROF_TOOLS_SYMBOLICATE_FOLDED_WRITER_H_
#define INPROF_TOOLS_SYMBOLICATE_FOLDED_WRITER_H_

#include <cstdio>

#include "convert/profile_builder.h"

namespace inprof::symbolicate {

// One line per distinct stack per thread, the thread's name as the root frame, lines sorted.
// Samples taken while the thread was idle (Idle leaf category) are left out: a flame graph shows
// where the time on CPU went. False if a write failed.
bool write_folded_stacks(const ProfileBuilder& profile, std::FILE* out);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_FOLDED_WRITER_H_
