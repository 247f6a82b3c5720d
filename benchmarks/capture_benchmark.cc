// The flight recorder's capture: how long capture() takes on a full 64 MiB ring, and how much the
// rest of the program is disturbed meanwhile.
//
//   BM_Capture/64: Profiler::capture() of a ring-mode session whose 64 MiB ring is full (and has
//     wrapped), written to a file in the temp directory (zstd, as any dump). Counters: the bytes
//     of records captured, the capture file's size, and — for a worker thread recording markers
//     all the while — how many it recorded during the capture and its slowest marker, next to its
//     slowest marker when no capture runs (the capture takes no lock a marker needs; a difference
//     is CPU contention on this 2-core machine, not waiting), and its marker rate with and
//     without a capture running.
#include <benchmark/benchmark.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <string>
#include <thread>

#include "inprof/markers.h"
#include "inprof/profiler.h"

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("inprof-capture-bench-" + std::to_string(getpid()) + "-" + name))
      .string();
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

struct Payload {
  static constexpr std::string_view kName = "BenchPayload";
  static constexpr inprof::MarkerField kFields[] = {{"url", "URL", inprof::Format::kUrl},
                                                    {"n", "N", inprof::Format::kInteger}};
};

// Records markers until told to stop, tracking its slowest one in each phase.
class MarkerWorker {
 public:
  MarkerWorker() : thread_([this] { run(); }) {}
  ~MarkerWorker() {
    stop_ = true;
    thread_.join();
  }
  void begin_phase() {
    max_ns_ = 0;
    count_ = 0;
  }
  uint64_t max_ns() const { return max_ns_.load(); }
  uint64_t count() const { return count_.load(); }

 private:
  void run() {
    int64_t n = 0;
    while (!stop_) {
      const uint64_t start = now_ns();
      inprof::marker<Payload>("bench", inprof::kCategoryOther, "https://example.com/x", ++n);
      const uint64_t took = now_ns() - start;
      if (took > max_ns_.load(std::memory_order_relaxed)) max_ns_ = took;
      count_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> max_ns_{0};
  std::atomic<uint64_t> count_{0};
  std::thread thread_;
};

void BM_Capture(benchmark::State& state) {
  inprof::Options o;
  o.mode = inprof::Mode::kRing;
  o.output_path = temp_path("final.inprof");
  o.buffer_size = static_cast<size_t>(state.range(0)) << 20;
  if (auto s = inprof::Profiler::start(o); !s) {
    state.SkipWithError(s.message().c_str());
    return;
  }
  // Fill the ring past full: ~90 bytes per marker.
  const int64_t fill = static_cast<int64_t>(o.buffer_size / 90) * 2;
  for (int64_t i = 0; i < fill; ++i) {
    inprof::marker<Payload>("fill", inprof::kCategoryOther, "https://example.com/fill", i);
  }
  MarkerWorker worker;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  worker.begin_phase();
  uint64_t quiet_start = now_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const double quiet_max_us = worker.max_ns() / 1e3;
  const double quiet_rate = worker.count() / ((now_ns() - quiet_start) / 1e9);

  const std::string path = temp_path("capture.inprof");
  uint64_t during = 0, worst_us = 0, during_ns = 0;
  for (auto _ : state) {
    worker.begin_phase();
    const uint64_t start = now_ns();
    if (auto s = inprof::Profiler::capture(path); !s) {
      state.SkipWithError(s.message().c_str());
      break;
    }
    during += worker.count();
    during_ns += now_ns() - start;
    worst_us = std::max<uint64_t>(worst_us, worker.max_ns() / 1000);
  }
  state.counters["capture_file_MiB"] = std::filesystem::file_size(path) / 1048576.0;
  state.counters["worker_markers_during_capture"] =
      benchmark::Counter(static_cast<double>(during), benchmark::Counter::kAvgIterations);
  state.counters["worker_max_marker_us_during"] = static_cast<double>(worst_us);
  state.counters["worker_max_marker_us_quiet"] = quiet_max_us;
  // Markers per second the worker recorded without and during captures: the capture slows it only
  // by taking CPU, on a 2-core machine that also runs the sampler.
  state.counters["worker_markers_per_s_quiet"] = quiet_rate;
  state.counters["worker_markers_per_s_during"] = during / (during_ns / 1e9);
  (void)inprof::Profiler::stop();
  std::filesystem::remove(path);
  std::filesystem::remove(o.output_path);
}
BENCHMARK(BM_Capture)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

}  // namespace

BENCHMARK_MAIN();
