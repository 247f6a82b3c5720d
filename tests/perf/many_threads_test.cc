// 64 threads of which 8 are busy, sampled at 1 kHz: no sample is dropped, and every thread is in
// the dump. Late ticks (a machine too loaded to keep 1 kHz) are counted apart and are not drops;
// they are reported, never asserted.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
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

constexpr uint64_t kIntervalNs = 1000000;  // the sessions' interval (1 ms)

struct Counted : internal::DumpVisitor {
  std::map<uint64_t, uint64_t> per_thread;  // samples and repeats, by thread id
  std::map<uint64_t, uint64_t> cpu_ns;      // the CPU time the samples carry, by thread id
  uint64_t records = 0;
  internal::StatsRecord stats;
  void on_sample(const internal::SampleRecord& s) override {
    ++per_thread[s.tid];
    // Without a CPU time of its own (the kernel's ring sample), a sample stands for one interval.
    cpu_ns[s.tid] += s.cpu_delta_ns.value_or(kIntervalNs);
    ++records;
  }
  void on_sample_repeat(const internal::SampleRepeatRecord& s) override {
    cpu_ns[s.tid] += s.cpu_delta_ns.value_or(0);
    ++per_thread[s.tid];
    ++records;
  }
  void on_stats(const internal::StatsRecord& s) override { stats = s; }
};

// The kernel's id of a std::thread (pthread has no portable way to ask another thread for it).
void pthread_getunique_np_tid(pthread_t thread, pid_t* tid) {
  // glibc keeps the id in the thread descriptor; pthread_getcpuclockid encodes it in the clock.
  clockid_t clock;
  if (pthread_getcpuclockid(thread, &clock) == 0) *tid = static_cast<pid_t>(~(clock >> 3));
}

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
  std::vector<std::chrono::nanoseconds> cpu_at_start(kBusy);
  std::map<uint64_t, int> busy_index;  // by thread id
  for (int i = 0; i < kBusy; ++i) {
    cpu_at_start[i] = testing::thread_cpu_time(threads[i].native_handle());
    pid_t tid = 0;
    pthread_getunique_np_tid(threads[i].native_handle(), &tid);
    busy_index[static_cast<uint64_t>(tid)] = i;
  }
  ASSERT_TRUE(Profiler::start(o));
  // Work done, not wall time: every busy thread has run 60 ms of CPU under the profiler.
  for (int i = 0; i < kBusy; ++i) {
    testing::wait_for_cpu(threads[i].native_handle(), std::chrono::milliseconds(60));
  }
  ASSERT_TRUE(Profiler::stop());
  std::vector<double> cpu_ms(kBusy);
  for (int i = 0; i < kBusy; ++i) {
    cpu_ms[i] = std::chrono::duration<double, std::milli>(
                    testing::thread_cpu_time(threads[i].native_handle()) - cpu_at_start[i])
                    .count();
  }
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
  // Each sleeping thread is visited on every tick: none has fewer than half the records of the
  // typical sleeping thread. Each busy one is sampled by its own timer on its CPU clock: at
  // least half a record per interval of CPU it used while profiled.
  std::vector<uint64_t> counts;
  for (auto& [tid, n] : c.per_thread) {
    if (!busy_index.count(tid)) counts.push_back(n);
  }
  std::sort(counts.begin(), counts.end());
  const uint64_t median = counts[counts.size() / 2];
  for (auto& [tid, n] : c.per_thread) {
    auto busy = busy_index.find(tid);
    if (busy == busy_index.end()) {
      EXPECT_GE(n * 2, median) << "thread " << tid;
    } else {
      EXPECT_GE(double(n), 0.5 * cpu_ms[busy->second]) << "busy thread " << tid;
    }
  }
}

// Item 11 of "Invisible to the program it profiles": threads that block the sampling signal cost
// the others nothing. Sixteen busy threads block it; the one busy thread that does not is still
// sampled per interval of its own CPU, and the blocked ones are counted as given up, never
// waited for.
TEST(ManyThreads, ThreadsThatBlockTheSignalCostTheOthersNothing) {
  constexpr int kBlocking = 16;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("inprof-blocking-" + std::to_string(getpid()) + ".inprof"))
                               .string();
  std::atomic<bool> stop{false};
  std::vector<std::thread> blocking;
  for (int i = 0; i < kBlocking; ++i) {
    blocking.emplace_back([&] {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, SIGURG);  // the default sampling signal
      pthread_sigmask(SIG_BLOCK, &set, nullptr);
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  std::thread free_thread([&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  pid_t free_tid = 0;
  pthread_getunique_np_tid(free_thread.native_handle(), &free_tid);
  Options o;
  o.output_path = path;
  o.interval = std::chrono::milliseconds(1);
  const auto cpu_before = testing::thread_cpu_time(free_thread.native_handle());
  ASSERT_TRUE(Profiler::start(o));
  const auto cpu_started = testing::thread_cpu_time(free_thread.native_handle());
  testing::wait_for_cpu(free_thread.native_handle(), std::chrono::milliseconds(60));
  const auto cpu_stopping = testing::thread_cpu_time(free_thread.native_handle());
  ASSERT_TRUE(Profiler::stop());
  const auto ms = [](std::chrono::nanoseconds d) {
    return std::chrono::duration<double, std::milli>(d).count();
  };
  const double cpu_ms = ms(testing::thread_cpu_time(free_thread.native_handle()) - cpu_before);
  const double inner_ms = ms(cpu_stopping - cpu_started);
  stop = true;
  for (auto& t : blocking) t.join();
  free_thread.join();

  Counted c;
  const auto result = internal::read_dump_file(path, c);
  std::filesystem::remove(path);
  ASSERT_TRUE(result.ok) << result.error;
  const auto free_id = static_cast<uint64_t>(free_tid);
  std::printf(
      "free thread: %llu records carrying %.1f ms for %.1f ms of CPU (%.1f ms while started, "
      "%.1f between, %.1f while stopped); given up %llu\n",
      static_cast<unsigned long long>(c.per_thread[free_id]), c.cpu_ns[free_id] / 1e6, cpu_ms,
      ms(cpu_started - cpu_before), inner_ms, cpu_ms - inner_ms - ms(cpu_started - cpu_before),
      static_cast<unsigned long long>(c.stats.samples_given_up));
  // Its CPU between start() returning and stop() being called is in its samples (a ring's sample
  // stands for one interval), and no more than it ran in all: what it ran while start() armed the
  // sampler is the session's edge (17 busy threads on 2 CPUs make start() long: up to 16 ms of its
  // CPU here, ~30 ms in a CI run beside the sanitizer builds). As many samples as intervals where
  // the kernel samples it; where it has a timer instead (the rings taken by the blocking ones),
  // expirations the kernel merged at its scheduler tick (4 ms here) are one sample carrying them
  // all: one per 4 intervals at least. The one at each edge may fall outside the session.
  constexpr double kSchedulerTickMs = 4.0;
  EXPECT_GE(c.cpu_ns[free_id] / 1e6, inner_ms - 2 * kSchedulerTickMs);
  EXPECT_LE(c.cpu_ns[free_id] / 1e6, cpu_ms + 1.0);
  EXPECT_GE(double(c.per_thread[free_id]), 0.25 * inner_ms);
  EXPECT_GT(c.stats.samples_given_up, 0u);
  EXPECT_EQ(c.stats.threads_timed_out, 0u);
}

}  // namespace
}  // namespace inprof
