// Turns the raw profile collected from a dump into processed-format tables: maps addresses to
// modules, symbolizes them, applies the leaf fix-up and builds the stack, frame and func tables.
#ifndef INPROF_TOOLS_SYMBOLICATE_PROFILE_CONVERTER_H_
#define INPROF_TOOLS_SYMBOLICATE_PROFILE_CONVERTER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "diagnostics.h"
#include "profile_builder.h"
#include "profile_model.h"

namespace inprof::symbolicate {

struct ConversionSummary {
  size_t modules_used = 0;          // modules some sample points into
  size_t modules_symbolicated = 0;  // of those, how many had a usable file
  size_t leaf_callers_inserted = 0;
  size_t jit_frames = 0;  // distinct frame addresses named by the JIT map
};

// Fills `builder` from `model`. Problems (unusable module files, ...) go to `diag`.
ConversionSummary convert_profile(const ProfileModel& model, ProfileBuilder& builder,
                                  Diagnostics& diag);

// Helpers exposed for tests.
std::string hex_string(const std::vector<uint8_t>& bytes);  // lowercase
std::string breakpad_id(const std::vector<uint8_t>& build_id);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_PROFILE_CONVERTER_H_
