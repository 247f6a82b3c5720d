// The profiler's own cost, from a dump's statistics records, as the Firefox Profiler's
// "profilerOverhead" of its process.
#ifndef INPROF_TOOLS_SYMBOLICATE_OVERHEAD_CONVERTER_H_
#define INPROF_TOOLS_SYMBOLICATE_OVERHEAD_CONVERTER_H_

#include <optional>

#include "convert/profile_builder.h"
#include "read/profile_model.h"

namespace inprof::symbolicate {

// Nothing where the dump predates these figures (its statistics count no tick). A dump that
// holds a part of a session (a capture, a rotation window) covers the time from its first
// statistics record on: the records count from the session's start.
std::optional<ProfilerOverhead> profiler_overhead(const ProfileModel& model, uint64_t pid,
                                                  ThreadIndex main_thread);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_OVERHEAD_CONVERTER_H_
