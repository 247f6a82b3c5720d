// Streams a ProfileBuilder's tables as Firefox Profiler processed-format JSON (version 66).
#ifndef INPROF_TOOLS_SYMBOLICATE_PROFILE_JSON_WRITER_H_
#define INPROF_TOOLS_SYMBOLICATE_PROFILE_JSON_WRITER_H_

#include <cstdio>
#include <string>
#include <string_view>

#include "convert/profile_builder.h"
#include "write/json_emitter.h"  // sanitize_utf8, for the symbol server too

namespace inprof::symbolicate {

inline constexpr int kProcessedProfileVersion = 66;

// Writes the profile to `out`. False if a write failed (check ferror/fclose as well).
bool write_profile_json(const ProfileBuilder& profile, std::FILE* out);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_PROFILE_JSON_WRITER_H_
