// The profile as pprof's profile.proto (github.com/google/pprof/proto/profile.proto), the format
// of `go tool pprof` and of the fleet profilers (Grafana Pyroscope, Parca, Google Cloud
// Profiler). Encoded by hand (lib/pprof/proto_encoder.h); the caller gzips it.
//
// Sample types: samples/count, cpu/nanoseconds (an on-CPU sample's weight, as the summary gives
// it: convert/sample_weight.h; 0 for an idle sample) and wall/nanoseconds (the time since the
// thread's previous sample); cpu is the default. One pprof sample per distinct (thread, stack),
// its values summed, labelled thread_name, tid and pid. A native frame and the frames inlined
// into it at the same address are one Location with a Line each, innermost first. Each library
// is a Mapping with its load range, file offset, path and build-id, and the has_* flags say what
// the symbolication found (so pprof does not symbolize again what is already named).
#ifndef INPROF_TOOLS_SYMBOLICATE_PPROF_WRITER_H_
#define INPROF_TOOLS_SYMBOLICATE_PPROF_WRITER_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "convert/profile_builder.h"

namespace inprof::symbolicate {

// Where a library was loaded (the dump's module record; of the first process that loaded it in
// a merged profile). start 0: unknown, and the Location addresses are library-relative.
struct PprofMapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t file_offset = 0;
  std::string build_id;  // hex, as `file` and pprof print it; empty if none
};

// `mappings` by LibIndex (missing entries are unknown). False if a write failed.
bool write_pprof(const ProfileBuilder& profile, const std::vector<PprofMapping>& mappings,
                 std::FILE* out);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_PPROF_WRITER_H_
