// ThreadVisitor where the kernel keeps no records of threads (perf events refused): what it asks
// the OS, and how often, for threads that sleep. A sleeping thread's name is not read again until
// it runs; a count that keeps changing lists the threads no more often than the listing's own
// length allows; a thread whose clock stopped answering is not visited again until a listing
// ends it; a dormant thread's longest unchecked time grows with the thread count.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sampling/sampler_constants.h"
#include "sampling/thread_visitor.h"
#include "session/process_info.h"

namespace inprof::internal {
namespace {

constexpr uint64_t kMillis = 1000000;

// The OS's threads, their clocks (none: ended), and what was asked of it.
struct UnwatchedOs {
  std::vector<uint64_t> tids;
  std::map<uint64_t, uint64_t> cpu;
  std::map<uint64_t, int> name_reads;
  int listings = 0;
  uint64_t listing_spin_ns = 0;  // how long a listing takes, at least
};

class UnwatchedOsLister : public ThreadLister {
 public:
  explicit UnwatchedOsLister(UnwatchedOs& os) : os_(os) {}
  bool list(std::vector<uint64_t>& tids) override {
    ++os_.listings;
    const uint64_t until = monotonic_ns() + os_.listing_spin_ns;
    while (monotonic_ns() < until) {
    }
    tids = os_.tids;
    return true;
  }
  std::optional<uint64_t> thread_count() override { return os_.tids.size(); }
  std::optional<uint64_t> cpu_time_ns(uint64_t tid) override {
    auto it = os_.cpu.find(tid);
    return it != os_.cpu.end() ? std::optional<uint64_t>(it->second) : std::nullopt;
  }
  std::string name(uint64_t tid) override {
    ++os_.name_reads[tid];
    return "t";
  }
  void forget(uint64_t) override {}

 private:
  UnwatchedOs& os_;
};

// The sampler's side, as Sampler::sample_thread does it: each visit reads the clock; one that
// no longer answers is gone.
struct CheckingVisits : ThreadVisitor::Visits {
  ThreadVisitor* visitor = nullptr;
  ThreadLister* lister = nullptr;
  std::map<uint64_t, int> visits;
  std::map<uint64_t, int> endings;
  void visit(uint64_t tid, ThreadState& state, uint64_t now) override {
    ++visits[tid];
    const std::optional<uint64_t> cpu = lister->cpu_time_ns(tid);
    if (!cpu) {
      visitor->note_gone(state);
      return;
    }
    state.observe_cpu(cpu, now);
  }
  void ending(uint64_t tid, ThreadState&) override { ++endings[tid]; }
  void listing() override {}
};

class ThreadVisitorUnwatched : public ::testing::Test {
 protected:
  ThreadVisitorUnwatched() {
    os_.tids = {main_, worker_};
    os_.cpu = {{main_, 10 * kMillis}, {worker_, 3 * kMillis}};
    auto lister = std::make_unique<UnwatchedOsLister>(os_);
    visits_.lister = lister.get();
    visitor_ =
        std::make_unique<ThreadVisitor>(config_, std::move(lister), metadata_, stopping_, visits_);
    visits_.visitor = visitor_.get();
  }
  // One tick `step` after the last: listing, names, visits.
  void tick(uint64_t step = 5 * kMillis) {
    now_ += step;
    visitor_->refresh(now_);
    visitor_->visit_threads(now_);
    visitor_->end_tick();
  }
  void run_for(uint64_t ns, uint64_t step = 5 * kMillis) {
    for (uint64_t t = 0; t < ns; t += step) tick(step);
  }

  const uint64_t main_ = process_id();
  const uint64_t worker_ = main_ + 1;
  UnwatchedOs os_;
  SamplerConfig config_;
  MetadataQueue metadata_;
  std::atomic<bool> stopping_{false};
  CheckingVisits visits_;
  std::unique_ptr<ThreadVisitor> visitor_;
  uint64_t now_ = 1000 * kMillis;
};

// Without records a thread's name is read when it is first listed and once more (its creator may
// rename it just after creating it); then only after it ran (it can rename itself only by
// running), or after kOsNameRecheckNs: 10,000 sleeping threads were 2,500 reads a second.
TEST_F(ThreadVisitorUnwatched, ASleepingThreadsNameIsReadAgainOnlyAfterItRuns) {
  run_for(5000 * kMillis);
  EXPECT_EQ(os_.name_reads[worker_], 2);
  os_.cpu[worker_] += kMillis;  // it runs
  run_for(5000 * kMillis);
  EXPECT_EQ(os_.name_reads[worker_], 3);
  run_for(kOsNameRecheckNs);
  EXPECT_EQ(os_.name_reads[worker_], 4);
}

// A count that changes at every tick (threads starting) asks for a listing each time; a listing
// waits for 19 times the last one's length: at 10,000 threads (~10 ms each) listing every 4 ms
// took the sampler's whole CPU while they started.
TEST_F(ThreadVisitorUnwatched, AChangingCountListsNoMoreOftenThanTheListingsLengthAllows) {
  tick();
  os_.listing_spin_ns = 2 * kMillis;
  tick();  // a listing that takes 2 ms or more
  const int before = os_.listings;
  for (int i = 0; i < 19; ++i) {
    const uint64_t tid = worker_ + 1 + i;
    os_.tids.push_back(tid);
    os_.cpu[tid] = 0;
    tick(2 * kMillis);
  }
  // 38 ms: one listing at most (38 ms after one of 2 ms or more), where each tick asked for one.
  EXPECT_LE(os_.listings - before, 1);
  run_for(200 * kMillis, 2 * kMillis);
  EXPECT_EQ(visitor_->threads().size(), os_.tids.size());  // every one listed in the end
}

// A thread whose clock stopped answering has ended: it is parked until a listing ends it (paced
// listings came up to 190 ms after 10,000 threads ended, each asked at every tick meanwhile).
// Its id answering again at a listing is a new thread's: the old one is ended, the new one added.
TEST_F(ThreadVisitorUnwatched, AThreadWhoseClockStoppedIsNotVisitedUntilAListingEndsIt) {
  tick();
  os_.cpu.erase(worker_);  // ended, still listed (on its way out)
  run_for(50 * kMillis);
  EXPECT_EQ(visits_.visits[worker_], 2);  // before it ended, and the visit that found it gone
  EXPECT_EQ(visits_.endings[worker_], 0);
  os_.cpu[worker_] = 0;  // the id is a new thread's
  os_.tids.push_back(worker_ + 1);
  os_.cpu[worker_ + 1] = 0;
  tick();
  EXPECT_EQ(visits_.endings[worker_], 1);
  tick();
  EXPECT_GT(visits_.visits[worker_], 2);
  EXPECT_FALSE(visitor_->threads().at(worker_).gone);
}

// A dormant thread is checked at least every 64 ms where threads are few (a wake-up that its CPU
// does not reveal costs at most that much of its wall time), 250 µs per thread where they are
// more, a second at most.
TEST_F(ThreadVisitorUnwatched, ADormantThreadsLongestUncheckedTimeGrowsWithTheThreads) {
  tick();
  EXPECT_EQ(visitor_->longest_dormant_check_ns(), kShortestDormantCheckNs);
  for (uint64_t i = 0; i < 1000; ++i) {
    os_.tids.push_back(worker_ + 1 + i);
    os_.cpu[worker_ + 1 + i] = 0;
  }
  tick();
  EXPECT_EQ(visitor_->longest_dormant_check_ns(), 1002 * kDormantCheckPerThreadNs);
  for (uint64_t i = 1000; i < 10000; ++i) {
    os_.tids.push_back(worker_ + 1 + i);
    os_.cpu[worker_ + 1 + i] = 0;
  }
  tick();
  EXPECT_EQ(visitor_->longest_dormant_check_ns(), kLongestDormantCheckNs);
}

}  // namespace
}  // namespace inprof::internal
