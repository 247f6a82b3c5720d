// A JIT symbol map in perf's format (/tmp/perf-<pid>.map: lines "START SIZE name", START and SIZE
// in hex), as node --perf-basic-prof and python3 -X perf write it. JITs re-emit code at addresses
// they used before, so a later line replaces whatever earlier lines said about its range.
#ifndef INPROF_TOOLS_SYMBOLICATE_JIT_MAP_H_
#define INPROF_TOOLS_SYMBOLICATE_JIT_MAP_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>

namespace inprof::symbolicate {

class JitMap {
 public:
  // Limits that keep a huge or hostile map from exhausting memory; lines past them are dropped.
  static constexpr size_t kMaxRanges = 4'000'000;
  static constexpr size_t kMaxNameBytes = 256u << 20;  // distinct names, in total
  static constexpr size_t kMaxNameLength = 4096;       // longer names are cut

  // Adds one piece of the map, in file order. Pieces end on line boundaries (FORMAT.md), so a
  // last line without a newline is taken as complete.
  void add_piece(std::string_view text);

  // The name of the code that contains `address`, or null.
  const std::string* find(uint64_t address) const;

  bool empty() const { return ranges_.empty(); }
  size_t range_count() const { return ranges_.size(); }
  uint64_t lines() const { return lines_; }
  uint64_t malformed_lines() const { return malformed_; }
  uint64_t dropped_lines() const { return dropped_; }  // over the limits

 private:
  struct Range {
    uint64_t end;  // one past the last byte
    uint32_t name;
  };
  void add_line(std::string_view line);
  void insert(uint64_t start, uint64_t end, uint32_t name);

  std::map<uint64_t, Range> ranges_;  // by start; never overlapping
  std::deque<std::string> names_;     // a deque: the views below stay valid as it grows
  std::unordered_map<std::string_view, uint32_t> name_ids_;  // views into names_' strings
  size_t name_bytes_ = 0;
  uint64_t lines_ = 0, malformed_ = 0, dropped_ = 0;
};

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_JIT_MAP_H_
