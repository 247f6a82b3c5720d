// Streams a ProfileBuilder's tables as Firefox Profiler processed-format JSON (version 66).
#ifndef INPROF_TOOLS_SYMBOLICATE_PROFILE_JSON_WRITER_H_
#define INPROF_TOOLS_SYMBOLICATE_PROFILE_JSON_WRITER_H_

#include <cstdio>
#include <string>
#include <string_view>

#include "convert/profile_builder.h"

namespace inprof::symbolicate {

inline constexpr int kProcessedProfileVersion = 66;

// Writes the profile to `out`. False if a write failed (check ferror/fclose as well).
bool write_profile_json(const ProfileBuilder& profile, std::FILE* out);

// Replaces bytes that are not valid UTF-8 with U+FFFD, so the JSON stays valid whatever the
// paths and symbol names hold.
std::string sanitize_utf8(std::string_view s);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_PROFILE_JSON_WRITER_H_
