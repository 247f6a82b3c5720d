// DormantThreads against a lister that plays the OS's clocks: while every CPU the process's
// clock counts is accounted for by the readings of threads that are not dormant (and the
// profiler's), no dormant thread is asked; once a dormant one runs more than the readings' lag,
// a round makes every dormant thread due, a bounded number per tick.
#include "sampling/dormant_threads.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sampling/sampler_constants.h"

namespace inprof::internal {
namespace {

struct ClockLister : ThreadLister {
  std::map<uint64_t, uint64_t> cpu;  // each thread's CPU clock
  uint64_t ended_cpu = 0;            // what ended threads used
  bool process_clock = true;
  int reads = 0;
  bool list(std::vector<uint64_t>&) override { return false; }
  std::optional<uint64_t> cpu_time_ns(uint64_t tid) override {
    ++reads;
    auto it = cpu.find(tid);
    if (it == cpu.end()) return std::nullopt;
    return it->second;
  }
  std::optional<uint64_t> process_cpu_time_ns() override {
    if (!process_clock) return std::nullopt;
    uint64_t sum = ended_cpu;
    for (const auto& [tid, ns] : cpu) sum += ns;
    return sum;
  }
  std::string name(uint64_t) override { return "t"; }
  void forget(uint64_t) override {}
};

constexpr uint64_t kInterval = 1000000;
constexpr uint64_t kMs = 1000000;

class DormantThreadsTest : public ::testing::Test {
 protected:
  DormantThreadsTest() : dormant_(kInterval) {}

  // `count` threads parked past the short back-off, and one busy thread read at every tick.
  void make_threads(uint64_t count) {
    for (uint64_t tid = 100; tid < 100 + count; ++tid) {
      ThreadState& s = threads_[tid];
      s.selected = true;
      s.parked = true;
      s.idle_checks = kMostIdleBackoffShift + 3;
      s.next_check_ns = ~uint64_t(0);
      s.tally = &dormant_.tally();
      lister_.cpu[tid] = 5 * kMs;  // what it used before it slept
      s.observe_cpu(lister_.cpu[tid], 0);
    }
    ThreadState& busy = threads_[kBusy];
    busy.selected = true;
    busy.awake = true;
    busy.tally = &dormant_.tally();
    lister_.cpu[kBusy] = 0;
  }

  // One tick at `now`: the busy thread ran the interval and was read by its visit.
  void tick(uint64_t now) {
    lister_.cpu[kBusy] += kInterval;
    threads_[kBusy].observe_cpu(lister_.cpu[kBusy], now);
    woken_.clear();
    dormant_.after_visits(
        now, now, threads_, lister_, profiler_,
        [](void* test, uint64_t tid, ThreadState& state) {
          state.parked = false;
          static_cast<DormantThreadsTest*>(test)->woken_.push_back(tid);
        },
        this);
  }

  static constexpr uint64_t kBusy = 1;
  DormantThreads dormant_;
  ClockLister lister_;
  std::map<uint64_t, ThreadState> threads_;
  std::vector<uint64_t> profiler_;
  std::vector<uint64_t> woken_;
};

TEST_F(DormantThreadsTest, AccountedCpuLeavesDormantThreadsAlone) {
  make_threads(100);
  uint64_t now = 10 * kMs;
  for (int i = 0; i < 200; ++i, now += kInterval) {
    tick(now);
    EXPECT_TRUE(woken_.empty()) << "tick " << i;
  }
  EXPECT_TRUE(dormant_.guarded());
  EXPECT_GT(dormant_.figures().checks, 5u);
  EXPECT_EQ(dormant_.figures().rounds, 0u);
  // The dormant threads' clocks were never read: only the busy one's, at its visits.
  EXPECT_EQ(lister_.reads, 0);
}

TEST_F(DormantThreadsTest, ADormantThreadThatRunsStartsARoundOverEveryDormantThread) {
  const uint64_t count = kDormantWakesPerTick + 100;
  make_threads(count);
  uint64_t now = 10 * kMs;
  for (int i = 0; i < 40; ++i, now += kInterval) tick(now);
  lister_.cpu[150] += 20 * kMs;  // one dormant thread ran 20 ms
  std::vector<uint64_t> all_woken;
  for (int i = 0; i < 60; ++i, now += kInterval) {
    tick(now);
    EXPECT_LE(woken_.size(), kDormantWakesPerTick);
    all_woken.insert(all_woken.end(), woken_.begin(), woken_.end());
  }
  EXPECT_EQ(dormant_.figures().rounds, 1u);
  ASSERT_EQ(all_woken.size(), count);  // each once, over two ticks or more
  for (uint64_t tid : all_woken) EXPECT_EQ(threads_[tid].next_check_ns, 0u);
}

TEST_F(DormantThreadsTest, TheProfilersOwnThreadsAndEndedOnesStartNoRound) {
  make_threads(10);
  profiler_ = {7};
  lister_.cpu[7] = 0;
  uint64_t now = 10 * kMs;
  for (int i = 0; i < 40; ++i, now += kInterval) tick(now);
  for (int i = 0; i < 200; ++i, now += kInterval) {
    lister_.cpu[7] += kInterval / 2;  // the sampler, busy half the time
    tick(now);
  }
  EXPECT_EQ(dormant_.figures().rounds, 0u);
  // A thread that ended with CPU unread starts one round; after it, that CPU is the baseline.
  lister_.ended_cpu += 30 * kMs;
  for (int i = 0; i < 200; ++i, now += kInterval) tick(now);
  EXPECT_EQ(dormant_.figures().rounds, 1u);
}

TEST_F(DormantThreadsTest, WithoutAProcessClockNothingIsGuarded) {
  lister_.process_clock = false;
  make_threads(10);
  uint64_t now = 10 * kMs;
  for (int i = 0; i < 40; ++i, now += kInterval) tick(now);
  EXPECT_FALSE(dormant_.guarded());
  EXPECT_TRUE(woken_.empty());
}

}  // namespace
}  // namespace inprof::internal
