// One process's ProfilerOverhead as the processed format's profilerOverhead entry, which the
// Firefox Profiler shows under Profile Info ("Profiler overhead").
#ifndef INPROF_TOOLS_SYMBOLICATE_PROFILER_OVERHEAD_JSON_H_
#define INPROF_TOOLS_SYMBOLICATE_PROFILER_OVERHEAD_JSON_H_

#include "convert/profile_builder.h"
#include "write/json_emitter.h"

namespace inprof::symbolicate {

void write_profiler_overhead(Emitter& e, const ProfilerOverhead& o);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_PROFILER_OVERHEAD_JSON_H_
