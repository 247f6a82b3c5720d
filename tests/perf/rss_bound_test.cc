// Memory stays bounded by the configured buffer: with a 64 KiB buffer and a 10 kHz session that
// pushes hundreds of times that through it (samples, and markers from the test's thread), the
// process's resident memory stops growing once the session has warmed up, and its growth over
// the whole session stays within the buffer plus the session's fixed costs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "../test_util.h"
#include "dump/dump_reader.h"
#include "inprof/markers.h"
#include "inprof/profiler.h"

namespace inprof {
namespace {

uint64_t resident_kib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kib = 0;
  while (std::fgets(line, sizeof(line), f)) {
    if (std::strncmp(line, "VmRSS:", 6) == 0) kib = std::strtoull(line + 6, nullptr, 10);
  }
  std::fclose(f);
  return kib;
}

struct Counts : internal::DumpVisitor {
  internal::StatsRecord stats;
  uint64_t markers = 0, samples = 0;
  void on_stats(const internal::StatsRecord& s) override { stats = s; }
  void on_marker(const internal::MarkerRecord&) override { ++markers; }
  void on_sample(const internal::SampleRecord&) override { ++samples; }
};

__attribute__((noinline)) void busy(std::atomic<bool>& stop) {
  while (!stop.load(std::memory_order_relaxed)) {
    asm volatile("" ::: "memory");
  }
}

TEST(RssBound, ResidentMemoryStaysBoundedByTheBuffer) {
  constexpr size_t kBuffer = 64u << 10;
  // What a session holds besides its buffer: the stack-copy buffer (64 KiB), the busy threads'
  // self-sampling queues (~190 KiB each), the unwind-rule cache (~0.5 MiB), the writer's chunk and
  // zstd workspace (~3 MiB), the parts of the modules' unwind tables libdw reads, and the profiler
  // threads' stacks.
  constexpr uint64_t kFixedBudgetKib = 12 << 10;
  // After warm-up the writer's chunk and its compressed copy may still grow toward their 1 MiB
  // flush size; a session that kept what passed through would grow by the late phase's volume
  // (> 10 MiB), far beyond this.
  constexpr uint64_t kSteadySlackKib = 3 << 10;
  // Volume through the buffer is set by markers this thread writes (a count, not a time):
  // each is ~30 bytes in the buffer, so the late phase pushes ~200 buffers' worth.
  constexpr int kWarmMarkers = 50000, kLateMarkers = 400000;

  const std::string path = (std::filesystem::temp_directory_path() /
                            ("inprof-rss-" + std::to_string(getpid()) + ".inprof"))
                               .string();
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) threads.emplace_back([&] { busy(stop); });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));  // their stacks are mapped
  const uint64_t before = resident_kib();

  Options o;
  o.output_path = path;
  o.interval = std::chrono::microseconds(100);
  o.buffer_size = kBuffer;
  ASSERT_TRUE(Profiler::start(o));
  // Each phase: its markers, and samples of the busy threads (CPU they ran under the profiler).
  for (int i = 0; i < kWarmMarkers; ++i) INPROF_MARKER("warm");
  testing::wait_for_cpu(threads[0].native_handle(), std::chrono::milliseconds(200));
  const uint64_t warm = resident_kib();
  for (int i = 0; i < kLateMarkers; ++i) INPROF_MARKER("late");
  testing::wait_for_cpu(threads[0].native_handle(), std::chrono::milliseconds(800));
  const uint64_t late = resident_kib();
  ASSERT_TRUE(Profiler::stop());
  stop = true;
  for (auto& t : threads) t.join();

  Counts c;
  const auto result = internal::read_dump_file(path, c);
  std::filesystem::remove(path);
  ASSERT_TRUE(result.ok) << result.error;
  std::printf(
      "RSS before %llu KiB, warm %llu KiB, late %llu KiB; samples %llu (+%llu dropped), "
      "markers %llu (+%llu dropped)\n",
      static_cast<unsigned long long>(before), static_cast<unsigned long long>(warm),
      static_cast<unsigned long long>(late),
      static_cast<unsigned long long>(c.stats.samples_recorded),
      static_cast<unsigned long long>(c.stats.samples_dropped),
      static_cast<unsigned long long>(c.markers),
      static_cast<unsigned long long>(c.stats.markers_dropped));
  // Every marker was either written or counted as dropped: none vanished, none was invented.
  EXPECT_EQ(c.markers + c.stats.markers_dropped, uint64_t(kWarmMarkers + kLateMarkers));
  EXPECT_GT(c.samples, 0u);
  EXPECT_LE(late, warm + kSteadySlackKib);
  EXPECT_LE(late, before + kBuffer / 1024 + kFixedBudgetKib);
}

}  // namespace
}  // namespace inprof
