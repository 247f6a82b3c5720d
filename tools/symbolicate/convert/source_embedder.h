// The source view's text: the files that the profile's functions come from (shared.sources),
// embedded in the profile when they are readable at symbolication time, so that double-clicking
// a function in the Firefox Profiler shows its lines with their sample counts, offline and in a
// shared profile (processed format v64+: sources.content, preferred by the viewer to fetching).
#ifndef INPROF_TOOLS_SYMBOLICATE_CONVERT_SOURCE_EMBEDDER_H_
#define INPROF_TOOLS_SYMBOLICATE_CONVERT_SOURCE_EMBEDDER_H_

#include <cstddef>
#include <string>

#include "convert/profile_builder.h"

namespace inprof::symbolicate {

struct SourceEmbedOptions {
  bool enabled = true;
  size_t max_file_bytes = size_t{2} << 20;    // a larger file is left out (generated code)
  size_t max_total_bytes = size_t{64} << 20;  // files past this total are left out
};

struct SourceEmbedReport {
  size_t files = 0;             // in the profile's source table
  size_t embedded = 0;          // with their text
  size_t bytes = 0;             // embedded in all
  size_t unreadable = 0;        // not found, not a regular file, or not readable
  size_t relative = 0;          // a relative name: its directory is unknown
  size_t too_large = 0;         // over max_file_bytes
  size_t not_text = 0;          // holds a NUL byte
  size_t over_total = 0;        // would have taken the total over max_total_bytes
  std::string summary() const;  // one line for the report on stderr
};

// Fills builder.mutable_sources().content, in the table's order. Files are read as they are now:
// the report says how many could not be.
SourceEmbedReport embed_sources(ProfileBuilder& builder, const SourceEmbedOptions& options);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_CONVERT_SOURCE_EMBEDDER_H_
