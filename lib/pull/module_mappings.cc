#include "pull/module_mappings.h"

#include <cstdio>
#include <string>
#include <vector>

#include "pull/code_segments.h"

namespace inprof::internal {
namespace {

constexpr uint64_t kMappingPageBytes = 4096;

std::string build_id_hex(const std::vector<uint8_t>& bytes) {
  std::string out;
  char two[3];
  for (uint8_t b : bytes) {
    std::snprintf(two, sizeof two, "%02x", b);
    out += two;
  }
  return out;
}

}  // namespace

void add_module_mappings(const std::map<uint64_t, ModuleRecord>& modules, PprofBuilder& builder) {
  const std::vector<CodeSegment> segments = loaded_code_segments();
  for (const auto& [id, m] : modules) {
    const std::string build_id = build_id_hex(m.build_id);
    bool found = false;
    for (const CodeSegment& s : segments) {
      if (s.start < m.start || s.start >= m.end) continue;
      builder.add_mapping(PprofMapping{s.start, s.limit, s.file_offset, m.path, build_id});
      found = true;
    }
    if (!found) {
      const uint64_t limit = (m.end + kMappingPageBytes - 1) & ~(kMappingPageBytes - 1);
      builder.add_mapping(PprofMapping{m.start, limit, m.file_offset, m.path, build_id});
    }
  }
}

}  // namespace inprof::internal
