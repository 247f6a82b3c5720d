// The executable segments of the modules loaded now, as the kernel maps them (page-aligned start,
// limit and file offset): what pprof's consumers expect of a Mapping. `go tool pprof` finds the
// program header it symbolizes with from a mapping's file offset and size, and takes a mapping
// that spans a whole module (from its first, read-only segment) for data. Read from the loader's
// list of modules (platform/<os>/code_segments_<os>.cc), never from a file.
#ifndef INPROF_LIB_PULL_CODE_SEGMENTS_H_
#define INPROF_LIB_PULL_CODE_SEGMENTS_H_

#include <cstdint>
#include <vector>

namespace inprof::internal {

struct CodeSegment {
  uint64_t start = 0;
  uint64_t limit = 0;
  uint64_t file_offset = 0;
};

std::vector<CodeSegment> loaded_code_segments();

}  // namespace inprof::internal

#endif  // INPROF_LIB_PULL_CODE_SEGMENTS_H_
