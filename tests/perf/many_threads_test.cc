// 64 threads of which 8 are busy, sampled at 1 kHz: no sample is dropped, and every thread is in
// the dump. Late ticks (a machine too loaded to keep 1 kHz) are counted apart and are not drops;
// they are reported, never asserted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "../test_util.h"
#include "dump/dump_reader.h"
#include "inprof/profiler.h"

namespace inprof {
namespace {

struct Counted : internal::DumpVisitor {
  std::map<uint64_t, uint64_t> per_thread;  // samples and repeats, by thread id
  uint64_t records = 0;
  internal::StatsRecord stats;
  void on_sample(const internal::SampleRecord& s) override {
    ++per_thread[s.tid];
    ++records;
  }
  void on_sample_repeat(const internal::SampleRepeatRecord& s) override {
    ++per_thread[s.tid];
    ++records;
  }
  void on_stats(const internal::StatsRecord& s) override { stats = s; }
};

TEST(ManyThreads, SixtyFourThreadsEightBusyAtOneKilohertzDropNothing) {
  constexpr int kThreads = 64, kBusy = 8;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("inprof-many-threads-" + std::to_string(getpid()) + ".inprof"))
                               .string();
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    if (i < kBusy) {
      threads.emplace_back([&] {
        while (!stop.load(std::memory_order_relaxed)) {
        }
      });
    } else {
      threads.emplace_back([&] {
        std::unique_lock lock(mutex);
        cv.wait(lock, [&] { return done; });
      });
    }
  }
  Options o;
  o.output_path = path;
  o.interval = std::chrono::milliseconds(1);
  // A busy thread may wait for a CPU behind 7 others: give it time to answer, so that an
  // overloaded machine shows up as late ticks, not as skipped threads.
  o.thread_answer_timeout = std::chrono::seconds(1);
  ASSERT_TRUE(Profiler::start(o));
  // Work done, not wall time: every busy thread has run 60 ms of CPU under the profiler.
  for (int i = 0; i < kBusy; ++i) {
    testing::wait_for_cpu(threads[i].native_handle(), std::chrono::milliseconds(60));
  }
  ASSERT_TRUE(Profiler::stop());
  stop = true;
  {
    std::lock_guard lock(mutex);
    done = true;
  }
  cv.notify_all();
  for (auto& t : threads) t.join();

  Counted c;
  const auto result = internal::read_dump_file(path, c);
  std::filesystem::remove(path);
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_TRUE(result.complete);
  RecordProperty("ticks_late", static_cast<int>(c.stats.ticks_late));
  RecordProperty("samples", static_cast<int>(c.records));
  std::printf("samples %llu, ticks late %llu\n", static_cast<unsigned long long>(c.records),
              static_cast<unsigned long long>(c.stats.ticks_late));
  EXPECT_EQ(c.stats.samples_dropped, 0u);
  EXPECT_EQ(c.stats.threads_timed_out, 0u);
  // Every sample the sampler counted as written reached the file.
  EXPECT_EQ(c.records, c.stats.samples_recorded);
  // All 64 threads (and the test's main thread) are there.
  EXPECT_GE(c.per_thread.size(), static_cast<size_t>(kThreads));
  // Each sleeping thread is visited on every tick, each busy one on every expiration of its own
  // timer (which keeps the rate better than the ticks on a loaded machine): none has fewer than
  // half the records of the typical thread.
  std::vector<uint64_t> counts;
  for (auto& [tid, n] : c.per_thread) counts.push_back(n);
  std::sort(counts.begin(), counts.end());
  const uint64_t median = counts[counts.size() / 2];
  for (auto& [tid, n] : c.per_thread) EXPECT_GE(n * 2, median) << "thread " << tid;
}

}  // namespace
}  // namespace inprof
