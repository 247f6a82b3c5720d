// A pprof profile (profile.proto) of stacks as the process holds them, built inside it: frames
// are addresses, each in the Mapping of the module it falls in (load range, file offset, path,
// GNU build-id), which is what `go tool pprof`, Parca and Pyroscope symbolize by. A frame the
// profiler makes up ("[ran between samples]") is a Location with a named Function and no
// address. Samples with the same locations and labels are summed.
#ifndef INPROF_LIB_PPROF_PPROF_BUILDER_H_
#define INPROF_LIB_PPROF_PPROF_BUILDER_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pprof/string_table.h"

namespace inprof::internal {

struct PprofMapping {
  uint64_t start = 0;        // lowest address of the module's loaded segments
  uint64_t limit = 0;        // one past the highest
  uint64_t file_offset = 0;  // of the segment mapped at `start`
  std::string path;
  std::string build_id;  // hex, as pprof prints it; empty if none
};

// A label: a string value (num_unit empty, str set) or a number.
struct PprofLabel {
  uint64_t key = 0;  // PprofBuilder::string()
  uint64_t str = 0;
  int64_t num = 0;
};

struct PprofValueType {
  std::string type;
  std::string unit;
};

class PprofBuilder {
 public:
  // `types` names the values every sample carries, in order; `default_type` is one of them.
  PprofBuilder(std::vector<PprofValueType> types, std::string_view default_type,
               PprofValueType period_type, int64_t period);

  uint64_t string(std::string_view s) { return strings_.index(s); }
  void set_period(int64_t period) { period_ = period; }
  // Mappings may come in any order, and until encode(); they must not overlap (the later one is
  // dropped).
  void add_mapping(const PprofMapping& mapping);

  // A stack's location ids, leaf first, are built with these two.
  // `address` is a frame's: the leaf's own PC (`call_site` false) or a return address, which is
  // looked up one byte earlier, inside its call instruction (the function that made the call,
  // even where the call was the last instruction of its function).
  uint64_t location(uint64_t address, bool call_site);
  // A frame with a name and no address (the profiler's own words: "[ran between samples]").
  uint64_t named_location(std::string_view name);

  // Adds `values` (one per type) to the sample with these locations and labels.
  void add_sample(std::span<const uint64_t> locations, std::span<const PprofLabel> labels,
                  std::span<const int64_t> values);

  // The encoded profile.proto (not gzipped), addresses unnamed: the consumer names them from
  // the binaries or debug files it has, with file and line. `time_nanos`: wall clock at the start.
  std::string encode(int64_t time_nanos, int64_t duration_nanos);

  size_t sample_count() const { return samples_.size(); }

 private:
  struct Location {
    uint64_t address = 0;        // as looked up (call sites: return address - 1)
    uint64_t function_name = 0;  // a named location's, a string index
  };
  uint64_t mapping_of(uint64_t address) const;

  std::vector<PprofValueType> types_;
  std::string default_type_;
  PprofValueType period_type_;
  int64_t period_;
  PprofStringTable strings_;
  std::map<uint64_t, uint64_t> mapping_starts_;  // start -> index into mappings_
  std::vector<PprofMapping> mappings_;
  std::vector<Location> locations_;  // id - 1
  std::unordered_map<uint64_t, uint64_t> address_ids_;
  std::unordered_map<uint64_t, uint64_t> name_ids_;  // string index -> location id
  // Key: the location ids, then ~0, then each label's key, str, num.
  std::map<std::vector<uint64_t>, std::vector<int64_t>> samples_;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_PPROF_PPROF_BUILDER_H_
