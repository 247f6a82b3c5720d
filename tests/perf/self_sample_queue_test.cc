// SelfSampleQueue (lib/sampling/self_sample_queue.h), the bounded queue a thread's timer handler
// fills and the sampler drains: order, bounds, the arena's ring, and what it promises to hold.
#include "sampling/self_sample_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

namespace inprof::internal {
namespace {

StackSnapshot* put(SelfSampleQueue& q, size_t bytes, uint8_t fill) {
  StackSnapshot* s = q.reserve(bytes);
  if (s == nullptr) return nullptr;
  EXPECT_EQ(s->capacity, bytes);
  std::memset(s->buffer, fill, bytes);
  s->stack_size = bytes;
  s->time_ns = fill;
  q.commit();
  return s;
}

TEST(SelfSampleQueue, HandsOutSnapshotsInOrderAndRefusesWhenFull) {
  SelfSampleQueue q(4, 1024);
  EXPECT_EQ(q.front(), nullptr);
  for (uint8_t i = 1; i <= 4; ++i) ASSERT_NE(put(q, 100, i), nullptr);
  EXPECT_EQ(q.reserve(100), nullptr) << "4 entries: the fifth must be refused, not overwrite";
  for (uint8_t i = 1; i <= 4; ++i) {
    const StackSnapshot* s = q.front();
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->time_ns, i);
    EXPECT_EQ(s->buffer[0], i);
    EXPECT_EQ(s->buffer[99], i);
    q.pop();
  }
  EXPECT_EQ(q.front(), nullptr);
}

TEST(SelfSampleQueue, StackBytesAreContiguousAcrossTheArenaEndAndBounded) {
  SelfSampleQueue q(16, 1000);
  ASSERT_NE(put(q, 600, 1), nullptr);
  EXPECT_EQ(q.reserve(600), nullptr) << "only 400 bytes are free";
  ASSERT_NE(put(q, 300, 2), nullptr);  // [600, 900)
  q.pop();                             // frees [0, 600)
  // 100 bytes remain at the end: a 500-byte copy starts over at the arena's beginning.
  StackSnapshot* s = put(q, 500, 3);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(q.front()->buffer[0], 2);
  q.pop();
  EXPECT_EQ(q.front()->buffer[0], 3);
  EXPECT_EQ(q.front()->buffer[499], 3);
  q.pop();
  EXPECT_EQ(q.reserve(1001), nullptr) << "larger than the arena";
}

TEST(SelfSampleQueue, KeepsOnlyWhatWasCopied) {
  SelfSampleQueue q(8, 1000);
  StackSnapshot* s = q.reserve(800);
  ASSERT_NE(s, nullptr);
  s->stack_size = 100;  // a shallow stack: the rest of the reservation goes back
  q.commit();
  EXPECT_NE(put(q, 800, 2), nullptr);
}

TEST(SelfSampleQueue, ResetEmptiesIt) {
  SelfSampleQueue q(2, 100);
  put(q, 50, 1);
  put(q, 50, 2);
  q.reset();
  EXPECT_EQ(q.front(), nullptr);
  EXPECT_NE(put(q, 100, 3), nullptr);
}

// What snapshots_that_fit() promises (the timers' queues are collected less often on it) holds
// wherever the arena's ring stands when the queue is emptied.
TEST(SelfSampleQueue, HoldsAsManySnapshotsAsItPromisesWhereverItsRingStands) {
  struct Case {
    size_t entries, arena, reserved, used;
  };
  for (const Case c :
       {Case{32, 4096, 300, 100}, Case{32, 4096, 1000, 1000}, Case{16, 4096, 2048, 64},
        Case{8, 100000, 100, 100}, Case{32, 4096, 64, 1}}) {
    SelfSampleQueue q(c.entries, c.arena);
    const size_t promised = q.snapshots_that_fit(c.reserved, c.used);
    for (size_t start = 0; start < c.arena; start += 97) {
      // Move the ring to `start` and empty the queue there.
      q.reset();
      if (start > 0) {
        StackSnapshot* s = q.reserve(start);
        ASSERT_NE(s, nullptr);
        s->stack_size = start;
        q.commit();
        q.pop();
      }
      size_t taken = 0;
      while (StackSnapshot* s = q.reserve(c.reserved)) {
        s->stack_size = c.used;
        q.commit();
        ++taken;
      }
      EXPECT_GE(taken, promised) << c.reserved << "/" << c.used << " bytes from " << start;
      // Never more than fits without a skip at the arena's end.
      EXPECT_LE(taken, std::min(c.entries, (c.arena - c.reserved) / c.used + 1));
    }
  }
  EXPECT_EQ(SelfSampleQueue(32, 4096).snapshots_that_fit(4096, 100), 0u) << "larger than half";
}

}  // namespace
}  // namespace inprof::internal
