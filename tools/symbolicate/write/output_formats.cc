#include "write/output_formats.h"

#include <utility>

#include "text_util.h"
#include "write/pprof_writer.h"
#include "write/profile_json_writer.h"
#include "write/text_summary.h"

namespace inprof::symbolicate {
namespace {

bool write_json(const WriteInput& in, std::FILE* out) {
  return write_profile_json(in.profile, out);
}

bool write_folded(const WriteInput& in, std::FILE* out) {
  return write_folded_stacks(in.profile, out, in.folded_weight);
}

bool write_summary(const WriteInput& in, std::FILE* out) {
  return write_text_summary(in.profile, in.top, out);
}

// pprof's Mappings: where each lib of the profile was loaded.
bool write_pprof_profile(const WriteInput& in, std::FILE* out) {
  std::vector<PprofMapping> mappings;
  for (size_t i = 0; i < in.profile.libs().size(); ++i) {
    PprofMapping m;
    if (i < in.lib_modules.size()) {
      const internal::ModuleRecord& r = in.lib_modules[i];
      m.start = r.start;
      m.end = r.end;
      m.file_offset = r.file_offset;
      m.build_id = hex_string(r.build_id);
    }
    mappings.push_back(std::move(m));
  }
  return write_pprof(in.profile, mappings, out);
}

constexpr OutputFormatSpec kFormats[] = {
    {.name = "json",
     .write = write_json,
     .extension = ".json",
     .not_json = nullptr,
     .servable = true,
     .embeds_sources = true},
    {.name = "folded",
     .write = write_folded,
     .extension = ".folded",
     .not_json = "folded stacks are text",
     .folded_weight = true},
    {.name = "summary",
     .write = write_summary,
     .extension = ".txt",
     .not_json = "a summary is text",
     .to_terminal = true},
    // Gzipped: go tool pprof and the fleet profilers take them so.
    {.name = "pprof",
     .write = write_pprof_profile,
     .extension = ".pb",
     .not_json = "a pprof profile is protobuf",
     .always_gzip = true,
     .batch = true},
};

}  // namespace

std::span<const OutputFormatSpec> output_formats() { return kFormats; }

const OutputFormatSpec& default_output_format() { return kFormats[0]; }

const OutputFormatSpec* find_output_format(const std::string& name) {
  for (const OutputFormatSpec& f : kFormats) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

std::string output_format_names() {
  std::string names;
  for (size_t i = 0; i < std::size(kFormats); ++i) {
    if (i) names += i + 1 == std::size(kFormats) ? " or " : ", ";
    names += kFormats[i].name;
  }
  return names;
}

}  // namespace inprof::symbolicate
