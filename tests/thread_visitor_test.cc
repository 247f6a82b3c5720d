// ThreadVisitor against a lister that plays the OS: when does it learn that the program's last
// thread has ended (main() called pthread_exit())?
#include "sampling/thread_visitor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <set>
#include <vector>

#include "session/process_info.h"

namespace inprof::internal {
namespace {

using Kind = ThreadLister::Activity::Kind;

// The OS as the sampler sees it: a thread list, a count that keeps an ended main thread (a
// zombie, as Linux's does), and context-switch records handed over at the next drain.
struct FakeOs {
  std::vector<uint64_t> tids;
  std::set<uint64_t> ended;
  std::deque<ThreadLister::Activity> records;
  int listings = 0;
};

class FakeLister : public ThreadLister {
 public:
  explicit FakeLister(FakeOs& os) : os_(os) {}
  bool list(std::vector<uint64_t>& tids) override {
    ++os_.listings;
    tids = os_.tids;
    return true;
  }
  std::optional<uint64_t> thread_count() override { return os_.tids.size(); }
  std::optional<uint64_t> cpu_time_ns(uint64_t) override { return 0; }
  std::string name(uint64_t) override { return "t"; }
  std::optional<bool> ended(uint64_t tid) override { return os_.ended.count(tid) != 0; }
  void forget(uint64_t) override {}
  bool watch_activity(uint64_t) override { return true; }
  void drain_activity(void (*deliver)(void*, const Activity&), void* context) override {
    while (!os_.records.empty()) {
      deliver(context, os_.records.front());
      os_.records.pop_front();
    }
  }

 private:
  FakeOs& os_;
};

struct NoVisits : ThreadVisitor::Visits {
  void visit(uint64_t, ThreadState&, uint64_t) override {}
  void ending(uint64_t, ThreadState&) override {}
  void listing() override {}
};

class ThreadVisitorEnd : public ::testing::Test {
 protected:
  ThreadVisitorEnd() {
    os_.tids = {main_};
    visitor_.set_program_ended([this] { ++program_ended_; });
    EXPECT_TRUE(visitor_.watch_activity(main_));
    tick();  // the first listing: the main thread
  }
  void tick() {
    now_ += 5000000;  // 5 ms: more than the listing period, far less than a full listing's
    visitor_.refresh(now_);
    visitor_.end_tick();
  }
  void record(Kind kind, uint64_t tid) { os_.records.push_back({kind, tid, now_}); }
  // main() starts the worker, then calls pthread_exit(): its end record comes, it stays listed.
  void start_worker_then_end_main() {
    record(Kind::kCreated, worker_);
    os_.tids = {main_, worker_};
    tick();
    record(Kind::kEnded, main_);
    os_.ended.insert(main_);
    tick();
    tick();
  }
  // The worker, the program's last thread, ends: how many calls of program_ended within 5 ticks.
  int end_worker() {
    record(Kind::kEnded, worker_);
    os_.tids = {main_};
    for (int i = 0; i < 5 && program_ended_ == 0; ++i) tick();
    return program_ended_;
  }

  const uint64_t main_ = process_id();
  const uint64_t worker_ = main_ + 1;
  FakeOs os_;
  SamplerConfig config_;
  MetadataQueue metadata_;
  std::atomic<bool> stopping_{false};
  NoVisits visits_;
  ThreadVisitor visitor_{config_, std::make_unique<FakeLister>(os_), metadata_, stopping_, visits_};
  uint64_t now_ = 1000000000;
  int program_ended_ = 0;
};

// main() starts a worker and calls pthread_exit(); the worker ends later. The OS's count is
// then what the first listing saw (the ended main thread, still counted): only a listing tells
// that no thread of the program is left, and it must come at once, not at the next periodic
// full listing (the process would live on that long).
TEST_F(ThreadVisitorEnd, TheLastThreadsEndIsSeenWithinTicks) {
  start_worker_then_end_main();
  EXPECT_EQ(program_ended_, 0);
  EXPECT_EQ(end_worker(), 1);
}

// The same after records were lost: the listing that follows shows the ended main thread again
// (a zombie), so the sampler knows it as a thread; it still counts as no thread of the program.
TEST_F(ThreadVisitorEnd, AnEndedMainThreadListedAgainIsNoThreadOfTheProgram) {
  start_worker_then_end_main();
  record(Kind::kLost, 0);
  tick();
  tick();
  EXPECT_EQ(program_ended_, 0);
  EXPECT_EQ(visitor_.threads().count(main_), 1u);  // listed again
  EXPECT_EQ(end_worker(), 1);
}

// While the program has a thread, no listing is made for it beyond the periodic ones.
TEST_F(ThreadVisitorEnd, ARunningProgramIsNotListedEveryTick) {
  record(Kind::kCreated, worker_);
  os_.tids = {main_, worker_};
  tick();
  const int listings = os_.listings;
  for (int i = 0; i < 20; ++i) tick();
  EXPECT_EQ(os_.listings, listings);
  EXPECT_EQ(program_ended_, 0);
}

}  // namespace
}  // namespace inprof::internal
