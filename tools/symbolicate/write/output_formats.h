// The output formats, one table entry each: what the CLI calls it, how it is written, and what
// the CLI and the run must know of it. A new format is a writer and an entry in
// output_formats.cc; nothing else names the formats.
#ifndef INPROF_TOOLS_SYMBOLICATE_OUTPUT_FORMATS_H_
#define INPROF_TOOLS_SYMBOLICATE_OUTPUT_FORMATS_H_

#include <cstddef>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "convert/profile_builder.h"
#include "dump/dump_records.h"
#include "write/folded_writer.h"

namespace inprof::symbolicate {

// Everything a writer may use; each takes what its format needs.
struct WriteInput {
  const ProfileBuilder& profile;
  // The module behind each lib of `profile`, by LibIndex (ModuleRecord{} where unknown): where
  // each was loaded, for pprof's Mappings.
  const std::vector<internal::ModuleRecord>& lib_modules;
  size_t top = 15;                                      // summary: functions per ranking
  FoldedWeight folded_weight = FoldedWeight::kSamples;  // folded: what a line counts
};

struct OutputFormatSpec {
  const char* name;  // --format NAME
  bool (*write)(const WriteInput& input, std::FILE* out);
  const char* extension;  // a batch's files: DUMP + extension (+ ".gz" when gzipped)
  // Why a NAME.json output is refused ("a summary is text"); nullptr: JSON, accepted.
  const char* not_json;
  bool always_gzip = false;     // gzipped whatever the output's name (where gzip is built in)
  bool batch = false;           // -o DIR converts each dump alone into DIR
  bool servable = false;        // --open can serve it (the Firefox Profiler reads it)
  bool embeds_sources = false;  // --sources applies
  bool folded_weight = false;   // --folded-weight applies
  bool to_terminal = false;     // with no -o, written to standard output
};

// The formats in the order the CLI lists them; the first is the default.
std::span<const OutputFormatSpec> output_formats();
const OutputFormatSpec& default_output_format();
// nullptr if no format is called `name`.
const OutputFormatSpec* find_output_format(const std::string& name);
// The names for a usage message: "json, folded, summary or pprof".
std::string output_format_names();

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_OUTPUT_FORMATS_H_
