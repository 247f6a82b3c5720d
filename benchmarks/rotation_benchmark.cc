// What a rotation (Options::rotate_interval) costs the sampling: two busy threads profiled for a
// few seconds, once in one dump and once rotating every 100 ms. For each, from the dumps: the
// CPU time each busy-thread sample stands for (one interval when no tick was missed), overall
// and for the first sample after each window boundary, the sampler's late ticks and the samples
// dropped (buffer full). A rotation that stalled sampling would show as larger CPU deltas after
// the boundaries, late ticks or drops.
//
//   rotation_benchmark [SECONDS]      (default 3)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "dump/dump_reader.h"
#include "inprof/profiler.h"
#include "session/process_info.h"

namespace {

using namespace inprof::internal;

std::atomic<bool> g_spin{true};

__attribute__((noinline)) void busy() {
  while (g_spin.load(std::memory_order_relaxed)) {
    asm volatile("" ::: "memory");
  }
}

struct At {
  uint64_t time_ns;
  size_t window;
  uint64_t cpu_ns;  // the thread's CPU time since its previous sample (0: unknown)
  bool operator<(const At& o) const { return time_ns < o.time_ns; }
};
// By thread: each sample's time, window and CPU delta.
using Times = std::map<uint64_t, std::vector<At>>;

struct Collect : DumpVisitor {
  Times* times;
  size_t window = 0;
  StatsRecord stats;
  // One dump: a window every 100 ms all the same, so that the gaps that contain a boundary are
  // compared with gaps chosen the same way (a boundary falls more often in a long gap).
  bool virtual_windows = false;
  size_t window_of(uint64_t time_ns) const {
    return virtual_windows ? size_t(time_ns / 100'000'000) : window;
  }
  void on_sample(const SampleRecord& r) override {
    (*times)[r.tid].push_back({r.time_ns, window_of(r.time_ns), r.cpu_delta_ns.value_or(0)});
  }
  void on_sample_repeat(const SampleRepeatRecord& r) override {
    (*times)[r.tid].push_back({r.time_ns, window_of(r.time_ns), r.cpu_delta_ns.value_or(0)});
  }
  void on_stats(const StatsRecord& r) override { stats = r; }
};

int run(const std::string& dir, std::chrono::milliseconds rotate, double seconds) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  g_spin = true;
  std::vector<uint64_t> tids(2);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      tids[i] = current_thread_id();
      ++ready;
      busy();
    });
  }
  while (ready < 2) std::this_thread::yield();
  inprof::Options o;
  o.output_path = dir + "/w-%n.inprof";
  o.rotate_interval = rotate;
  if (!inprof::Profiler::start(o)) return 1;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  (void)inprof::Profiler::stop();
  g_spin = false;
  for (auto& t : threads) t.join();

  Times times;
  StatsRecord last;
  size_t files = 0;
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir)) paths.push_back(e.path());
  for (const std::string& p : paths) {
    Collect c;
    c.times = &times;
    c.window = files;
    c.virtual_windows = rotate.count() == 0;
    if (!read_dump_file(p, c).ok) return 1;
    if (c.stats.samples_recorded >= last.samples_recorded) last = c.stats;
    ++files;
  }
  const uint64_t interval = 1'000'000;
  // A sample's CPU delta is the CPU time its thread used since its previous sample: one interval
  // when sampling kept up, several when ticks were missed while the thread ran. A longer wall
  // gap alone only says the thread did not run (2 cores, shared).
  size_t samples = 0, over = 0, crossing = 0, crossing_over = 0;
  uint64_t cpu_sum = 0, cpu_max = 0, crossing_sum = 0, crossing_max = 0;
  for (uint64_t tid : tids) {
    auto& t = times[tid];
    std::sort(t.begin(), t.end());
    samples += t.size();
    for (size_t i = 1; i < t.size(); ++i) {
      const uint64_t cpu = t[i].cpu_ns;
      cpu_sum += cpu;
      cpu_max = std::max(cpu_max, cpu);
      over += cpu > 2 * interval;
      if (t[i].window != t[i - 1].window) {  // the first sample after a window boundary
        ++crossing;
        crossing_sum += cpu;
        crossing_max = std::max(crossing_max, cpu);
        crossing_over += cpu > 2 * interval;
      }
    }
  }
  std::printf(
      "%-22s %3zu files  %5zu busy-thread samples: CPU delta mean %.2f ms, max %.2f ms,"
      " > 2 intervals: %zu; late ticks %llu, dropped %llu\n",
      rotate.count() ? "rotating every 100 ms" : "one dump", files, samples,
      samples > tids.size() ? double(cpu_sum) / double(samples - tids.size()) / 1e6 : 0.0,
      double(cpu_max) / 1e6, over, static_cast<unsigned long long>(last.ticks_late),
      static_cast<unsigned long long>(last.samples_dropped));
  if (crossing) {
    std::printf(
        "%-22s first samples after a %s boundary: %zu, CPU delta mean %.2f ms, max %.2f ms,"
        " > 2 intervals: %zu\n",
        "", rotate.count() ? "window" : "(virtual, every 100 ms)", crossing,
        double(crossing_sum) / double(crossing) / 1e6, double(crossing_max) / 1e6, crossing_over);
  }
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 3.0;
  const std::string base =
      (std::filesystem::temp_directory_path() / ("rotation-bench-" + std::to_string(process_id())))
          .string();
  int status = run(base + "-one", std::chrono::milliseconds(0), seconds);
  status |= run(base + "-rotating", std::chrono::milliseconds(100), seconds);
  return status;
}
