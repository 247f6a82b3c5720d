// The processed profile's meta object and libs array, as JSON.
#ifndef INPROF_TOOLS_SYMBOLICATE_PROFILE_META_JSON_H_
#define INPROF_TOOLS_SYMBOLICATE_PROFILE_META_JSON_H_

#include "convert/profile_builder.h"
#include "write/json_emitter.h"

namespace inprof::symbolicate {

void write_meta(Emitter& e, const ProfileBuilder& p);
void write_libs(Emitter& e, const ProfileBuilder& p);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_PROFILE_META_JSON_H_
