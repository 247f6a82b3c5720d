// The writer thread sleeps as long as the buffer's filling allows (Session::writer_loop): a session
// that records little does not wake a thread of the program's process 50 times a second, and a
// buffer that fills is still drained before it overflows. Both asserted as counts: wake-ups of the
// writer, and markers written or dropped.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "dump/dump_reader.h"
#include "inprof/markers.h"
#include "inprof/profiler.h"
#include "thread_switches.h"

namespace inprof {
namespace {

using testing::voluntary_switches;

// The id of this process's thread named `name`, or 0.
uint64_t thread_named(const char* name) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    FILE* f = std::fopen((entry.path() / "comm").c_str(), "r");
    if (f == nullptr) continue;
    char comm[64] = {};
    const bool read = std::fgets(comm, sizeof(comm), f) != nullptr;
    std::fclose(f);
    if (read && std::strncmp(comm, name, std::strlen(name)) == 0) {
      return std::stoull(entry.path().filename().string());
    }
  }
  return 0;
}

std::string temp_output(const char* what) {
  return (std::filesystem::temp_directory_path() /
          ("inprof-writer-" + std::string(what) + "-" + std::to_string(getpid()) + ".inprof"))
      .string();
}

struct WakeupCounts : internal::DumpVisitor {
  internal::StatsRecord stats;
  uint64_t markers = 0;
  void on_stats(const internal::StatsRecord& s) override { stats = s; }
  void on_marker(const internal::MarkerRecord&) override { ++markers; }
};

// Every thread of the process sleeps for 2 s of a session: the writer wakes to flush (every
// 500 ms), not every 20 ms as it did (about 100 wake-ups in those 2 s).
void expect_a_sleeping_process_wakes_the_writer_rarely(bool cpu_samples) {
  const std::string path = temp_output(cpu_samples ? "idle-cpu" : "idle-nocpu");
  Options o;
  o.output_path = path;
  o.cpu_samples = cpu_samples;
  ASSERT_TRUE(Profiler::start(o));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // past the first drains
  const uint64_t writer = thread_named("inprof-writer");
  ASSERT_NE(writer, 0u);
  const uint64_t before = voluntary_switches(writer);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const uint64_t wakes = voluntary_switches(writer) - before;
  ASSERT_TRUE(Profiler::stop());
  std::filesystem::remove(path);
  std::printf("writer wake-ups in 2 s of sleep (CPU samples %s): %llu\n",
              cpu_samples ? "on" : "off", static_cast<unsigned long long>(wakes));
  EXPECT_LE(wakes, 20u);
}

TEST(Writer, ASleepingProcessWakesItRarely) {
  expect_a_sleeping_process_wakes_the_writer_rarely(true);
}

TEST(Writer, AMemoryOnlySessionWakesItRarely) {
  expect_a_sleeping_process_wakes_the_writer_rarely(false);
}

// After a quiet second (the writer asleep for its longest), markers come at ~200 KB/s into a
// 64 KiB buffer: it would overflow within a third of a second of a writer that kept sleeping.
// The sampler's tick wakes the writer once the buffer is a quarter full, and the writer's waits
// follow the rate from then on: nothing is dropped.
void expect_a_filling_buffer_drained_in_time(bool cpu_samples) {
  const std::string path = temp_output(cpu_samples ? "burst-cpu" : "burst-nocpu");
  Options o;
  o.output_path = path;
  o.buffer_size = 64u << 10;
  o.cpu_samples = cpu_samples;
  ASSERT_TRUE(Profiler::start(o));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  constexpr int kBatches = 100, kPerBatch = 100;  // ~30 bytes a marker in the buffer
  for (int b = 0; b < kBatches; ++b) {
    for (int i = 0; i < kPerBatch; ++i) INPROF_MARKER("steady");
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
  }
  ASSERT_TRUE(Profiler::stop());
  WakeupCounts c;
  const auto result = internal::read_dump_file(path, c);
  std::filesystem::remove(path);
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_EQ(c.stats.markers_dropped, 0u);
  EXPECT_EQ(c.markers, uint64_t(kBatches * kPerBatch));
}

TEST(Writer, AFillingBufferIsDrainedBeforeItOverflows) {
  expect_a_filling_buffer_drained_in_time(true);
}

TEST(Writer, AFillingBufferIsDrainedBeforeItOverflowsWithoutCpuSamples) {
  expect_a_filling_buffer_drained_in_time(false);
}

}  // namespace
}  // namespace inprof
