// ThreadVisitor against a lister that plays the OS: when does it learn that the program's last
// thread has ended (main() called pthread_exit())? How are threads created under its watch
// named, and when does it ask the OS for a name?
#include "sampling/thread_visitor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sampling/sampler_constants.h"
#include "session/process_info.h"

namespace inprof::internal {
namespace {

using Kind = ThreadLister::Activity::Kind;

// The OS as the sampler sees it: a thread list, a count that keeps an ended main thread (a
// zombie, as Linux's does), and context-switch records handed over at the next drain.
struct FakeOs {
  std::vector<uint64_t> tids;
  std::set<uint64_t> ended;
  std::map<uint64_t, std::string> names;  // "t" for the others
  // A record, and the name a kNamed one carries.
  std::deque<std::pair<ThreadLister::Activity, std::string>> records;
  int listings = 0;
  int name_reads = 0;
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
  std::string name(uint64_t tid) override {
    ++os_.name_reads;
    auto it = os_.names.find(tid);
    return it != os_.names.end() ? it->second : "t";
  }
  std::optional<bool> ended(uint64_t tid) override { return os_.ended.count(tid) != 0; }
  void forget(uint64_t) override {}
  bool watch_activity(uint64_t) override { return true; }
  void drain_activity(void (*deliver)(void*, const Activity&), void* context) override {
    while (!os_.records.empty()) {
      auto& [record, name] = os_.records.front();
      record.name = name.c_str();
      deliver(context, record);
      os_.records.pop_front();
    }
  }

 private:
  FakeOs& os_;
};

// The sampler's side: nothing, unless a test scripts what a visit does.
struct ScriptedVisits : ThreadVisitor::Visits {
  std::function<void(uint64_t tid, ThreadState& state)> on_visit;
  void visit(uint64_t tid, ThreadState& state, uint64_t) override {
    if (on_visit) on_visit(tid, state);
  }
  void ending(uint64_t, ThreadState&) override {}
  void listing() override {}
};

class ThreadVisitorEnd : public ::testing::Test {
 protected:
  ThreadVisitorEnd() {
    os_.tids = {main_};
    os_.names[main_] = "server";
    visitor_.set_program_ended([this] { ++program_ended_; });
    EXPECT_TRUE(visitor_.watch_activity(main_));
    tick();  // the first listing: the main thread
  }
  void tick() {
    now_ += 5000000;  // 5 ms: more than the listing period, far less than a full listing's
    visitor_.refresh(now_);
    visitor_.end_tick();
  }
  void record(Kind kind, uint64_t tid) { os_.records.push_back({{kind, tid, now_}, ""}); }
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
  ScriptedVisits visits_;
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

// A thread created under the visitor's watch is born with its creator's name (the kernel copies
// it): taken from the creator without asking the OS, and corrected by the creator's renames that
// the records tell late. Times in the records are what the ticks' clock says.
class ThreadVisitorNames : public ThreadVisitorEnd {
 protected:
  ThreadVisitorNames() {
    // The main thread's, "server", was read by the first listing (the fixture's first tick).
    os_.names[worker_] = "read-by-the-os";
    EXPECT_EQ(name_of(main_), "server");
    reads_before_ = os_.name_reads;
  }
  // Created by `creator` (0: unknown) at `at_ns`.
  void created(uint64_t tid, uint64_t at_ns, uint64_t creator) {
    os_.records.push_back({{Kind::kCreated, tid, at_ns, nullptr, creator}, ""});
    os_.tids.push_back(tid);
  }
  void created(uint64_t tid, uint64_t at_ns) { created(tid, at_ns, main_); }
  std::string worker_after_creator_renamed(uint64_t created_at, uint64_t renamed_at);
  void named(uint64_t tid, const std::string& name, uint64_t at_ns) {
    os_.records.push_back({{Kind::kNamed, tid, at_ns}, name});
  }
  std::string name_of(uint64_t tid) const {
    auto it = visitor_.threads().find(tid);
    return it != visitor_.threads().end() ? it->second.name : "(unknown)";
  }
  int reads_since() const { return os_.name_reads - reads_before_; }
  int reads_before_ = 0;
};

TEST_F(ThreadVisitorNames, ThreadsCreatedByAWatchedThreadTakeItsNameWithoutAskingTheOs) {
  for (uint64_t i = 1; i <= 3; ++i) created(main_ + i, now_ + i);
  tick();
  for (uint64_t i = 1; i <= 3; ++i) EXPECT_EQ(name_of(main_ + i), "server");
  EXPECT_EQ(reads_since(), 0);
}

// The creator renames itself at `renamed_at`, the worker is created at `created_at`, and the
// worker's record is read first (it came from another CPU's ring): the worker's name after.
std::string ThreadVisitorNames::worker_after_creator_renamed(uint64_t created_at,
                                                             uint64_t renamed_at) {
  created(worker_, created_at);
  named(main_, "acceptor", renamed_at);
  tick();
  EXPECT_EQ(name_of(main_), "acceptor");
  return name_of(worker_);
}

TEST_F(ThreadVisitorNames, ACreatorsRenameReadLateStillNamesWhatItCreatedAfter) {
  EXPECT_EQ(worker_after_creator_renamed(now_ + 20, now_ + 10), "acceptor");
}

TEST_F(ThreadVisitorNames, ACreatorsRenameAfterTheCreationLeavesTheCreatedThreadAlone) {
  EXPECT_EQ(worker_after_creator_renamed(now_ + 10, now_ + 20), "server");
}

TEST_F(ThreadVisitorNames, TheCreatedThreadsOwnNameWinsOverItsCreatorsLateRecord) {
  created(worker_, now_ + 20);
  named(worker_, "worker-1", now_ + 30);
  named(main_, "acceptor", now_ + 10);
  tick();
  EXPECT_EQ(name_of(worker_), "worker-1");
  // Its own rename read before its creation: never given its creator's.
  const uint64_t second = worker_ + 1;
  named(second, "worker-2", now_ + 50);
  created(second, now_ + 40);
  tick();
  EXPECT_EQ(name_of(second), "worker-2");
  EXPECT_EQ(reads_since(), 0);
}

// An older rename of a thread read after a newer one does not undo it.
TEST_F(ThreadVisitorNames, AnOlderRenameReadLastIsNotTaken) {
  named(main_, "new", now_ + 20);
  named(main_, "old", now_ + 10);
  tick();
  EXPECT_EQ(name_of(main_), "new");
}

// The creator's name is known only as it was after the creation (its read came later): the
// created thread may have been born with another, so the OS is asked for its own.
TEST_F(ThreadVisitorNames, ACreatorNameKnownOnlyFromAfterTheCreationIsNotCopied) {
  created(worker_, now_ - 1000);  // before the first listing read main's name
  tick();
  EXPECT_EQ(name_of(worker_), "read-by-the-os");
  EXPECT_EQ(reads_since(), 1);
}

// A thread that ended before the sampler could read its name (the read finds nothing): the
// rename record it made before it ended, read after, names it (seen under TSan: threads living
// 0.2 ms shown unnamed).
TEST_F(ThreadVisitorNames, AThreadGoneBeforeItsNameIsReadIsNamedByItsRecord) {
  os_.names[worker_] = "";                     // ended: its comm file is gone
  created(worker_, now_ + 10, /*creator=*/0);  // by a thread it does not know
  tick();
  named(worker_, "short-1", now_ - 100);  // made before the read, read after it
  tick();
  EXPECT_EQ(name_of(worker_), "short-1");
}

// Records lost (a burst of thread starts overflowed the kernel's rings): what the visitor asks
// the OS again, and when. Ticks here visit every thread, as the sampler's do.
class ThreadVisitorLoss : public ThreadVisitorEnd {
 protected:
  // The main thread and, created by it, more threads than a tick visits between two drains.
  static constexpr uint64_t kWorkers = 2 * kVisitsBetweenDrains;
  ThreadVisitorLoss() {
    for (uint64_t i = 1; i <= kWorkers; ++i) {
      os_.records.push_back({{Kind::kCreated, main_ + i, now_, nullptr, main_}, ""});
      os_.tids.push_back(main_ + i);
    }
    tick();
    reads_before_ = os_.name_reads;
  }
  void tick() {
    now_ += 5000000;
    visitor_.refresh(now_);
    visitor_.visit_threads(now_);
    visitor_.end_tick();
  }
  // Ticks for `ms` milliseconds: past a names pass.
  void ticks_for(int ms) {
    for (int i = 0; i < ms / 5; ++i) tick();
  }
  int reads_before_ = 0;
};

// A thread whose start record was lost, and which ends before the tick that learns of the loss
// is over (a long one: thousands of threads visited), is found by a listing within that tick.
// Listed only at the next tick, it was missing from the profile (1,400 of 10,000 threads, with
// the sampler slowed down).
TEST_F(ThreadVisitorLoss, AThreadWhoseStartRecordWasLostIsListedWithinTheTick) {
  const uint64_t brief = main_ + kWorkers + 1;
  int visited = 0;
  visits_.on_visit = [&](uint64_t, ThreadState&) {
    if (++visited == 1) {  // started; its record lost
      os_.records.push_back({{Kind::kLost, 0, now_}, ""});
      os_.tids.push_back(brief);
    } else if (visited == static_cast<int>(kWorkers)) {  // ended; its end record lost too
      os_.tids.pop_back();
    }
  };
  tick();
  EXPECT_EQ(visitor_.threads().count(brief), 1u);
}

// The same at the session's end: the last drain's loss is followed by a listing.
TEST_F(ThreadVisitorLoss, ThreadsWhoseStartRecordsWereLostAreListedAtTheEnd) {
  const uint64_t last = main_ + kWorkers + 1;
  os_.records.push_back({{Kind::kLost, 0, now_}, ""});
  os_.tids.push_back(last);
  visitor_.drain_activity();
  visitor_.list_if_records_lost(now_ + 1, /*last=*/true);
  EXPECT_EQ(visitor_.threads().count(last), 1u);
}

// After a loss, a thread's rename may be among the records lost: its name is read again only if
// its check finds it ran since (the sampler marks it so; here, one thread). Reading every name
// after each loss cost ~50 ms at 10,000 threads, several times in a burst of starts.
TEST_F(ThreadVisitorLoss, OnlyThreadsThatRanWhileRecordsWereLostHaveTheirNamesRead) {
  const uint64_t ran = main_ + 1;
  visits_.on_visit = [&](uint64_t tid, ThreadState& state) {
    if (state.activity.resync && tid == ran && !state.activity.name_unsure) {
      state.mark_name_unsure();
    }
  };
  os_.records.push_back({{Kind::kLost, 0, now_}, ""});
  ticks_for(600);
  EXPECT_GE(os_.name_reads - reads_before_, 1);
  EXPECT_LE(os_.name_reads - reads_before_, 3);  // read on its back-off while unsure
}

// A thread whose end record came while records were being lost (two drains within a long tick),
// still listed by the listing that follows the loss (it was leaving): ended by its record once
// the records are whole again. Its record was dropped before that, and it stayed until the next
// full listing, 10 s on, visited at every tick (10,000 threads woken to end at once). (Ticks
// without visits here: a visit's listing reads the real clock.)
TEST_F(ThreadVisitorLoss, AThreadEndedWhileRecordsWereLostIsEndedOnceTheyAreWholeAgain) {
  const uint64_t leaving = main_ + 1;
  os_.records.push_back({{Kind::kLost, 0, now_}, ""});
  os_.records.push_back({{Kind::kEnded, leaving, now_}, ""});
  visitor_.drain_activity();
  visitor_.drain_activity();
  ThreadVisitorEnd::tick();  // the listing that follows the loss still shows it
  std::erase(os_.tids, leaving);
  for (int i = 0; i < 20; ++i) ThreadVisitorEnd::tick();
  EXPECT_EQ(visitor_.threads().count(leaving), 0u);
}

// One whose end record was lost with the rest, listed after the loss, then gone: the sampler
// finds its clock gone (note_gone) and a listing within ~50 ms ends it.
TEST_F(ThreadVisitorLoss, AThreadGoneWithoutItsEndRecordIsEndedByTheNextListing) {
  const uint64_t gone = main_ + 1;
  os_.records.push_back({{Kind::kLost, 0, now_}, ""});
  ThreadVisitorEnd::tick();
  ThreadVisitorEnd::tick();  // listed again
  ASSERT_EQ(visitor_.threads().count(gone), 1u);
  std::erase(os_.tids, gone);
  visitor_.note_gone(visitor_.threads().at(gone));
  for (int i = 0; i < 20; ++i) ThreadVisitorEnd::tick();
  EXPECT_EQ(visitor_.threads().count(gone), 0u);
}

}  // namespace
}  // namespace inprof::internal
