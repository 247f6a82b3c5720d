// One scrape's window of a session (pull mode): the samples its threads took in the `duration_ns`
// after it was attached, summed by stack, thread and labels into a pprof profile
// whose values are samples/count, cpu/nanoseconds and wall/nanoseconds — weighed as symbolicate
// weighs them (tools/symbolicate/convert/sample_weight.h): an on-CPU sample by the CPU its thread
// used since its previous sample (at most kMostIntervalsPerSample intervals), a sample of a
// sleeping thread by no CPU, and both by the wall time since the thread's previous sample. CPU a
// thread ran where no sample saw it goes under a "[ran between samples]" frame: what a sleeping
// copy or a busy sample past the cap carried too (no CPU is dropped). Labels:
// thread_name, tid, each label scope active (label=TEXT) and each interval marker around the
// sample (marker=NAME, marker_labels.h).
//
// Fed by the session's writer thread while attached (record()); read by the pull thread once
// detached (pprof()).
#ifndef INPROF_LIB_PULL_SCRAPE_WINDOW_H_
#define INPROF_LIB_PULL_SCRAPE_WINDOW_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "dump/dump_records.h"
#include "pprof/pprof_builder.h"
#include "pull/marker_labels.h"
#include "session/record_tap.h"

namespace inprof::internal {

class ScrapeWindow final : public RecordTap {
 public:
  explicit ScrapeWindow(uint64_t duration_ns);

  void attached(uint64_t session_start_ns, const Options& options) override;
  void record(RecordType type, std::span<const uint8_t> payload) override;
  void session_ended() override { ended_.store(true, std::memory_order_release); }
  bool ended() const { return ended_.load(std::memory_order_acquire); }

  // The window's profile.proto (not gzipped): `start_unix_ns` is the wall clock when it was
  // attached, `duration_ns` how long it read (shorter than asked if the session stopped).
  std::string pprof(uint64_t start_unix_ns, uint64_t duration_ns);

  uint64_t samples() const { return samples_; }

 private:
  struct ThreadWindow {
    std::string name;
    bool have_previous = false;
    uint64_t previous_ns = 0;
    bool have_stack = false;       // the last sample's stack, which its repeats share:
    std::vector<uint64_t> frames;  // leaf first
    uint32_t flags = 0;
    std::vector<SampleLabel> labels;
  };
  void add_sample(std::span<const uint8_t> payload);
  void add_repeat(std::span<const uint8_t> payload);
  // Weighs a sample (or repeat) of `t` at `time_ns` with its stack, flags and labels.
  void weigh(ThreadWindow& t, uint64_t tid, uint64_t time_ns, std::optional<uint64_t> cpu_delta);
  // CPU no sample saw run: a sample of its own (count 0) under [ran between samples], alone or
  // above `frames`.
  void add_unseen(uint64_t tid, const ThreadWindow& t, uint64_t time_ns, uint64_t cpu,
                  bool above_frames);
  std::vector<PprofLabel> sample_labels(uint64_t tid, const ThreadWindow& t);

  const uint64_t duration_ns_;
  uint64_t interval_ns_ = 1000000;
  uint64_t from_ns_ = 0;  // the window, on the session's clock
  uint64_t until_ns_ = 0;
  std::atomic<bool> ended_{false};
  PprofBuilder builder_;
  MarkerLabels markers_{builder_};  // samples go to the builder through it
  std::unordered_map<uint64_t, ThreadWindow> threads_;
  std::unordered_map<uint64_t, std::string> strings_;  // label strings (kString)
  std::map<uint64_t, ModuleRecord> modules_;           // by id
  uint64_t samples_ = 0;
  SampleRecord scratch_;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_PULL_SCRAPE_WINDOW_H_
