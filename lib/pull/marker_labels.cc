#include "pull/marker_labels.h"

#include <algorithm>
#include <limits>

namespace inprof::internal {
namespace {

constexpr uint64_t kStillOpen = std::numeric_limits<uint64_t>::max();
// MarkerRecord::phase
constexpr uint8_t kMarkerInterval = 1, kMarkerIntervalStart = 2, kMarkerIntervalEnd = 3;

}  // namespace

void MarkerLabels::label(Held& sample, uint64_t name) {
  if (!marker_key_) marker_key_ = builder_.string("marker");
  for (const PprofLabel& l : sample.labels) {
    if (l.key == marker_key_ && l.str == name) return;
  }
  sample.labels.push_back({marker_key_, name, 0});
}

void MarkerLabels::add(uint64_t tid, uint64_t time_ns, std::vector<uint64_t> locations,
                       std::vector<PprofLabel> labels, const std::array<int64_t, 3>& values) {
  Held sample{tid, time_ns, std::move(locations), std::move(labels), values};
  for (const Interval& i : intervals_) {
    if (i.tid == tid && i.start_ns <= time_ns && time_ns <= i.end_ns) label(sample, i.name);
  }
  held_.push_back(std::move(sample));
  newest_ns_ = std::max(newest_ns_, time_ns);
  if (newest_ns_ > kHoldNs) flush_before(newest_ns_ - kHoldNs);
}

void MarkerLabels::marker(const MarkerRecord& m) {
  if (m.phase != kMarkerInterval && m.phase != kMarkerIntervalStart &&
      m.phase != kMarkerIntervalEnd)
    return;
  const uint64_t name = builder_.string(m.name);
  Interval interval{m.tid, m.start_ns, m.phase == kMarkerIntervalStart ? kStillOpen : m.end_ns,
                    name};
  if (m.phase == kMarkerIntervalEnd) {
    // Closes the newest open interval of that name on the thread (nested ones end inner first).
    auto open = std::find_if(intervals_.rbegin(), intervals_.rend(), [&](const Interval& i) {
      return i.tid == m.tid && i.name == name && i.end_ns == kStillOpen;
    });
    if (open == intervals_.rend()) return;
    open->end_ns = m.end_ns;
    return;  // the samples it covers were labelled as they came
  }
  for (Held& sample : held_) {
    if (sample.tid == m.tid && m.start_ns <= sample.time_ns && sample.time_ns <= interval.end_ns) {
      label(sample, name);
    }
  }
  intervals_.push_back(interval);
  if (intervals_.size() > kMostIntervals) intervals_.pop_front();
  newest_ns_ = std::max(newest_ns_, m.end_ns);
}

void MarkerLabels::flush_before(uint64_t time_ns) {
  // Arrival order is time order but for a collection's lag: those before `time_ns` at the front.
  while (!held_.empty() && held_.front().time_ns < time_ns) {
    Held& h = held_.front();
    builder_.add_sample(h.locations, h.labels, h.values);
    held_.pop_front();
  }
  std::erase_if(intervals_, [&](const Interval& i) { return i.end_ns < time_ns; });
}

void MarkerLabels::flush() { flush_before(kStillOpen); }

}  // namespace inprof::internal
