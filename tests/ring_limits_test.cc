#include <gtest/gtest.h>

#include "perf_self_sampling_linux.h"

namespace inprof::internal {
namespace {

TEST(RingLimits, SmallMachinesKeepTheLeastCapAndHalfTheAllowance) {
  // 2 CPUs at the kernel's default 516 KiB per CPU: 16 rings within 516 KiB.
  const RingLimits two = ring_limits(2, 516);
  EXPECT_EQ(two.rings, kLeastRingCap);
  EXPECT_EQ(two.budget_bytes, 516u * 1024);
  EXPECT_EQ(ring_limits(0, 516).rings, kLeastRingCap);
}

TEST(RingLimits, RingsAndBudgetGrowWithTheCpus) {
  // 64 CPUs: rings for 128 threads, 96 KiB each, well inside half of 64 x 516 KiB.
  const RingLimits big = ring_limits(64, 516);
  EXPECT_EQ(big.rings, 128u);
  EXPECT_EQ(big.budget_bytes, 128u * 96 * 1024);
  EXPECT_LE(big.budget_bytes, 64u * 516 * 1024 / 2);
  // Never past the most rings, whatever the machine.
  EXPECT_EQ(ring_limits(1024, 516).rings, kMaxPerfThreads);
}

TEST(RingLimits, ATightAllowanceBoundsTheBudget) {
  // An administrator's smaller allowance is never exceeded: half of it, not the per-ring figure.
  const RingLimits tight = ring_limits(64, 16);
  EXPECT_EQ(tight.rings, 128u);
  EXPECT_EQ(tight.budget_bytes, 64u * 16 * 1024 / 2);
}

}  // namespace
}  // namespace inprof::internal
