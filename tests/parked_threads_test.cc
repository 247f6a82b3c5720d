#include "sampling/parked_threads.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace inprof::internal {
namespace {

TEST(ParkedThreads, HandsBackOnlyWhatIsDueEarliestFirst) {
  ParkedThreads parked;
  parked.park(7, 300);
  parked.park(5, 100);
  parked.park(9, ParkedThreads::kUntilWoken);
  parked.park(6, 200);
  std::vector<std::pair<uint64_t, uint64_t>> due;
  parked.take_due(250, [&](uint64_t tid, uint64_t at) { due.emplace_back(tid, at); });
  EXPECT_EQ(due, (std::vector<std::pair<uint64_t, uint64_t>>{{5, 100}, {6, 200}}));
  due.clear();
  parked.take_due(ParkedThreads::kUntilWoken - 1,
                  [&](uint64_t tid, uint64_t at) { due.emplace_back(tid, at); });
  EXPECT_EQ(due, (std::vector<std::pair<uint64_t, uint64_t>>{{7, 300}}));  // 9 waits to be woken
  EXPECT_EQ(parked.size(), 1u);
}

TEST(ParkedThreads, StaleEntriesAreDroppedOnceTheyOutnumberTheLiveOnes) {
  ParkedThreads parked;
  std::map<uint64_t, uint64_t> live;  // tid -> the time it is parked until now
  // One thread parked again and again (woken by its switches in between): one live entry.
  for (uint64_t i = 0; i < 1000; ++i) {
    parked.park(1, 1000 + i);
    live[1] = 1000 + i;
    parked.compact_if_stale(live.size(), [&](uint64_t tid, uint64_t at) {
      auto it = live.find(tid);
      return it != live.end() && it->second == at;
    });
  }
  EXPECT_LE(parked.size(), 2 * live.size() + 64);
  std::vector<uint64_t> due;
  parked.take_due(~uint64_t(0) - 1, [&](uint64_t, uint64_t at) { due.push_back(at); });
  ASSERT_FALSE(due.empty());
  EXPECT_EQ(due.back(), 1999u);  // the live entry survived every compaction
}

}  // namespace
}  // namespace inprof::internal
