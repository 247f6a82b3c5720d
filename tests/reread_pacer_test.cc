#include "sampling/reread_pacer.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace inprof::internal {
namespace {

constexpr uint64_t kMs = 1'000'000;

// Reads taken back to back at `step_ns` apart for `span_ns`, each costing `cost_ns`: how many
// the pacer let through.
uint64_t reads_allowed(RereadPacer& pacer, uint64_t from_ns, uint64_t span_ns, uint64_t step_ns,
                       uint64_t cost_ns) {
  uint64_t allowed = 0;
  for (uint64_t now = from_ns; now < from_ns + span_ns; now += step_ns) {
    if (!pacer.may_read(now)) continue;
    pacer.charge(cost_ns);
    ++allowed;
  }
  return allowed;
}

TEST(RereadPacer, AFewReadsNowAndThenAreNeverHeldBack) {
  RereadPacer pacer;
  // 100 threads woken together once a second, each read again (20 µs): all at once.
  for (uint64_t second = 1; second <= 10; ++second) {
    EXPECT_EQ(reads_allowed(pacer, second * 1000 * kMs, 100 * 1000, 1000, 20'000), 100u);
  }
}

TEST(RereadPacer, AStormIsHeldToItsShareOfACpu) {
  RereadPacer pacer;
  // Reads wanted every 10 µs for 2 s, 25 µs each: ~1/25 of the time may go to them, plus the
  // credit kept from before the storm (100 ms of budget, ~4 ms of reads).
  const uint64_t start = 5000 * kMs;
  const uint64_t allowed = reads_allowed(pacer, start, 2000 * kMs, 10'000, 25'000);
  const uint64_t spent_ns = allowed * 25'000;
  EXPECT_GE(spent_ns, 2000 * kMs / 25 * 9 / 10);
  EXPECT_LE(spent_ns, 2000 * kMs / 25 + 4 * kMs + 25'000);
}

TEST(RereadPacer, AReadCountsForWhatItTookUpToACap) {
  RereadPacer pacer;
  const uint64_t now = 1000 * kMs;
  while (pacer.may_read(now)) pacer.charge(150'000);  // the credit spent
  // The last read's share (25 × 150 µs) later, the budget has come back.
  EXPECT_TRUE(pacer.may_read(now + 150'000 * 25));
  // A read descheduled midway (4 ms) counts as 200 µs, not as what it took.
  pacer.charge(4 * kMs);
  EXPECT_FALSE(pacer.may_read(now + 200'000 * 25));
  EXPECT_TRUE(pacer.may_read(now + 150'000 * 25 + 200'000 * 25));
}

TEST(RereadPacer, ThoseWaitingAskAgainAboutWhenTheBudgetComesToThem) {
  RereadPacer pacer;
  for (int i = 0; i < 16; ++i) pacer.charge(20'000);
  EXPECT_EQ(pacer.retry_in_ns(1, kMs), kMs);                // never sooner than asked
  EXPECT_EQ(pacer.retry_in_ns(10, kMs), 10 * 20'000 * 25);  // ten reads' share
  EXPECT_EQ(pacer.retry_in_ns(100'000, kMs), 1000 * kMs);   // a second at most
}

}  // namespace
}  // namespace inprof::internal
