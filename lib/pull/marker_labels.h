// A scrape's interval markers as pprof labels: each sample of a thread inside one of its interval
// markers carries the label marker=NAME (pprof has no timeline; a label is what it can hold, and
// `-tagfocus=marker=NAME` then shows where the time in that interval went). Instant markers
// cover no sample and are left out.
//
// A marker is recorded when it ends, and a sample reaches the writer up to a collection later
// than it was taken: samples wait here up to kHoldNs of session time for the marker that covers
// them, and a marker is remembered as long for the samples that come after it. An interval
// longer than that labels its last kHoldNs only.
#ifndef INPROF_LIB_PULL_MARKER_LABELS_H_
#define INPROF_LIB_PULL_MARKER_LABELS_H_

#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "dump/dump_records.h"
#include "pprof/pprof_builder.h"

namespace inprof::internal {

class MarkerLabels {
 public:
  static constexpr uint64_t kHoldNs = 2'000'000'000;
  static constexpr size_t kMostIntervals = 4096;  // open or recent; the oldest go first

  explicit MarkerLabels(PprofBuilder& builder) : builder_(builder) {}

  // A sample for the builder, once no marker can reach it any more.
  void add(uint64_t tid, uint64_t time_ns, std::vector<uint64_t> locations,
           std::vector<PprofLabel> labels, const std::array<int64_t, 3>& values);
  void marker(const MarkerRecord& m);
  // Everything held goes to the builder (the window ends).
  void flush();

 private:
  struct Held {
    uint64_t tid, time_ns;
    std::vector<uint64_t> locations;
    std::vector<PprofLabel> labels;
    std::array<int64_t, 3> values;
  };
  struct Interval {
    uint64_t tid, start_ns, end_ns;  // end: UINT64_MAX while open
    uint64_t name;                   // the builder's string
  };
  void label(Held& sample, uint64_t name);
  void flush_before(uint64_t time_ns);

  PprofBuilder& builder_;
  std::deque<Held> held_;
  std::deque<Interval> intervals_;
  uint64_t newest_ns_ = 0;
  uint64_t marker_key_ = 0;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_PULL_MARKER_LABELS_H_
