// How much time a sample stands for: the profile's sample weights and the text summary's times
// (issue 21, items 2 and 3).
//
// An on-CPU sample weighs the CPU time its thread used since its previous sample. Busy threads
// are sampled per interval of their own CPU time, so this is one interval in the steady state;
// a brief wake-up weighs its microseconds, not a whole interval, and a sample that stands for
// several intervals (timer expirations the kernel merged, a deep stack that took long to copy)
// weighs all of them. An idle sample (the thread was blocked, or did not run) weighs the wall
// time since the previous one: with idle samples included, the call tree still shows where the
// thread waited and for how long; a thread's first idle sample, the wall time since the thread
// started (its start record, or the end of a pause after it), at least one interval: a thread
// first copied late (thousands started at once, ticks late on a loaded machine) waited there
// all along. Where the CPU time is unknown (a thread's first sample, a platform that does not
// report it), a sample weighs one interval, and is counted. A sample weighs at most kMaxIntervals
// intervals of CPU: beyond that the CPU time came from a gap in the sampling (the thread was given
// up for a while, a ring was read too late on an overloaded machine) whose code the sample did not
// see. The profile model gives that CPU samples of its own under [ran between samples]
// (ProfileModel::push_sample); what still reaches a weigher past the cap (beyond the model's most
// pieces) is counted as CPU time not represented.
#ifndef INPROF_TOOLS_SYMBOLICATE_CONVERT_SAMPLE_WEIGHT_H_
#define INPROF_TOOLS_SYMBOLICATE_CONVERT_SAMPLE_WEIGHT_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "convert/profile_builder.h"

namespace inprof::symbolicate {

// One thread's samples, in time order.
class SampleWeigher {
 public:
  static constexpr uint64_t kMaxIntervals = 16;  // the library's kMostIntervalsPerSample

  // `platform` is the profile's meta.platform. Windows reports a thread's CPU time only at the
  // scheduler's clock tick (15.6 ms): most deltas are 0 and a few hold a whole tick, which would
  // lay each tick's CPU on whichever stack was sampled at it. There an on-CPU sample weighs one
  // interval (it was taken while the thread ran).
  SampleWeigher(uint64_t interval_ns, const std::string& platform)
      : interval_ns_(interval_ns), coarse_cpu_clock_(platform == "Windows") {}
  // The weigher of `thread`'s samples (its start and pauses weigh its first idle sample).
  SampleWeigher(const Meta& meta, const Thread& thread)
      : SampleWeigher(meta.interval_ns, meta.platform) {
    thread_ = &thread;
    // A flight recorder's capture keeps the threads' start records, not their older samples.
    not_before_ns_ = meta.profiling_start_ns;
  }

  uint64_t weight_ns(const SampleTable::Sample& s, bool idle) {
    if (!have_previous_) {
      since_ns_ = since_start_ns(s.time_ns);
    } else {
      since_ns_ = s.time_ns >= previous_ns_ ? s.time_ns - previous_ns_ : interval_ns_;
    }
    have_previous_ = true;
    previous_ns_ = s.time_ns;
    if (idle) return since_ns_;
    if (coarse_cpu_clock_) return interval_ns_;
    if (!s.cpu_delta_ns) {
      ++cpu_unknown_;
      return interval_ns_;
    }
    const uint64_t most = kMaxIntervals * interval_ns_;
    if (*s.cpu_delta_ns <= most) return *s.cpu_delta_ns;
    ++capped_;
    unrepresented_ns_ += *s.cpu_delta_ns - most;
    return most;
  }
  // The wall time the last sample weighed stands for (whether idle or not).
  uint64_t since_ns() const { return since_ns_; }
  // On-CPU samples weighed as one interval because their CPU time was not known.
  uint64_t cpu_unknown() const { return cpu_unknown_; }
  // On-CPU samples that followed a gap of more than kMaxIntervals intervals, and the CPU time
  // beyond that which no sample represents.
  uint64_t capped() const { return capped_; }
  uint64_t unrepresented_ns() const { return unrepresented_ns_; }

 private:
  // A thread's first sample: since it started, or since the end of its last pause before
  // `time_ns`; at least one interval (a thread listed at a tick is copied at that tick).
  uint64_t since_start_ns(uint64_t time_ns) const {
    if (thread_ == nullptr) return interval_ns_;
    uint64_t start = std::max(thread_->register_ns, not_before_ns_);
    for (const PausedRange& pause : thread_->paused_ranges) {
      if (pause.end_ns <= time_ns) start = std::max(start, pause.end_ns);
    }
    return time_ns > start ? std::max(time_ns - start, interval_ns_) : interval_ns_;
  }

  uint64_t interval_ns_;
  bool coarse_cpu_clock_;
  const Thread* thread_ = nullptr;
  uint64_t not_before_ns_ = 0;
  uint64_t since_ns_ = 0;
  uint64_t previous_ns_ = 0;
  bool have_previous_ = false;
  uint64_t cpu_unknown_ = 0;
  uint64_t capped_ = 0;
  uint64_t unrepresented_ns_ = 0;
};

// The viewer adds weights up in floating point and prints some sums as they are (the source and
// assembly views: 16.333999999999996), so the processed format's weights are whole numbers: whole
// milliseconds ("tracing-ms", the viewer's "Running Time (ms)") at an interval of 1 ms or more,
// whole intervals ("samples") below that, where a sample weighs a fraction of a millisecond and
// whole milliseconds would leave most samples weighing nothing. What a sample's time is more or
// less than whole units is carried to its thread's next sample of the same kind (on CPU, idle),
// so a thread's on-CPU and idle totals stay exact to half a unit, and a stack's to the carry.
class WholeUnitWeights {
 public:
  explicit WholeUnitWeights(uint64_t interval_ns)
      : unit_ns_(interval_ns >= kMillisecond ? kMillisecond : (interval_ns ? interval_ns : 1)) {}

  // "tracing-ms" or "samples", for the weights this gives.
  const char* weight_type() const { return unit_ns_ == kMillisecond ? "tracing-ms" : "samples"; }
  uint64_t unit_ns() const { return unit_ns_; }

  // `ns`, the time weight_ns() gave a sample, in whole units.
  uint64_t units(uint64_t ns, bool idle) {
    int64_t& carry = carry_ns_[idle ? 1 : 0];
    // carry is in [-unit/2, unit/2), so the sum with half a unit is never negative.
    const int64_t exact = static_cast<int64_t>(ns) + carry;
    const uint64_t whole =
        static_cast<uint64_t>(exact + static_cast<int64_t>(unit_ns_ / 2)) / unit_ns_;
    carry = exact - static_cast<int64_t>(whole * unit_ns_);
    return whole;
  }

 private:
  static constexpr uint64_t kMillisecond = 1000000;
  uint64_t unit_ns_;
  int64_t carry_ns_[2] = {0, 0};
};

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_CONVERT_SAMPLE_WEIGHT_H_
