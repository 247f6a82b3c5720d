// A summary for a terminal: per thread, the hottest functions by self time (the sample's leaf)
// and by total time (anywhere on the stack), in samples and percent.
#ifndef INPROF_TOOLS_SYMBOLICATE_TEXT_SUMMARY_H_
#define INPROF_TOOLS_SYMBOLICATE_TEXT_SUMMARY_H_

#include <cstddef>
#include <cstdio>

#include "convert/profile_builder.h"

namespace inprof::symbolicate {

// `top` functions in each ranking. Idle samples (the thread did not run) are counted but not
// ranked. False if a write failed.
bool write_text_summary(const ProfileBuilder& profile, size_t top, std::FILE* out);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_TEXT_SUMMARY_H_
