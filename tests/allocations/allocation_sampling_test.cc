// Sampling by bytes (lib/allocations/sampling.h), the tag a small sampled block carries
// (lib/allocations/block_tag.h) and the set that holds the large ones (address_set.h).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "allocations/address_set.h"
#include "allocations/block_tag.h"
#include "allocations/sampling.h"

namespace inprof::internal {
namespace {

// The countdown as the interposer runs it, over a fixed sequence of sizes.
struct Counter {
  AllocationRng rng;
  int64_t countdown = 0;
  uint64_t rate;
  explicit Counter(uint64_t r, uint64_t seed) : rate(r) {
    rng.seed(seed);
    countdown = draw_countdown(rng, rate);
  }
  // The weight recorded for an allocation of `size`, or 0 if it is not sampled.
  uint64_t allocate(uint64_t size) {
    if ((countdown -= static_cast<int64_t>(size)) > 0) return 0;
    countdown = draw_countdown(rng, rate);
    return size == 0 ? 0 : sample_weight(size, rate);
  }
};

TEST(AllocationSamplingTest, WeightIsTheSizeOverTheSamplingProbability) {
  constexpr uint64_t R = 512 << 10;
  EXPECT_EQ(sample_weight(100, 1), 100u);  // rate 1: every allocation, at its size
  EXPECT_EQ(sample_weight(0, R), 0u);
  const double s = 1000;
  EXPECT_NEAR(double(sample_weight(1000, R)), s / -std::expm1(-s / R), 1.0);
  // A block far larger than R is always sampled, at its size.
  EXPECT_NEAR(double(sample_weight(uint64_t(64) * R, R)), 64.0 * R, 1.0);
  // A small block stands for about one mean interval.
  EXPECT_NEAR(double(sample_weight(16, R)), double(R) + 8, 2.0);
}

TEST(AllocationSamplingTest, CountdownMeanIsTheRate) {
  AllocationRng rng;
  rng.seed(42);
  constexpr uint64_t R = 4096;
  constexpr int kDraws = 200000;
  double sum = 0;
  for (int i = 0; i < kDraws; ++i) {
    const int64_t c = draw_countdown(rng, R);
    ASSERT_GE(c, 1);
    sum += double(c);
  }
  // Exponential: sigma of the mean = R / sqrt(n); 5 sigma (a fixed seed: deterministic).
  EXPECT_NEAR(sum / kDraws, double(R), 5.0 * R / std::sqrt(double(kDraws)));
}

// A million allocations of mixed sizes: the estimate of each size class's bytes is within 4
// standard deviations of the truth (the variance from the design: s^2 e^(-s/R) / (1 - e^(-s/R))
// per allocation). The seed is fixed, so the outcome is too.
TEST(AllocationSamplingTest, EstimateIsUnbiasedForMixedSizes) {
  constexpr uint64_t R = 64 << 10;
  Counter counter(R, 7);
  AllocationRng sizes;
  sizes.seed(99);
  double truth[3] = {}, estimate[3] = {}, variance[3] = {};
  for (int i = 0; i < 1000000; ++i) {
    const uint64_t pick = sizes.next() % 100;
    const int cls = pick < 90 ? 0 : pick < 99 ? 1 : 2;
    const uint64_t size = cls == 0   ? 16 + sizes.next() % 4000
                          : cls == 1 ? 4096 + sizes.next() % 60000
                                     : 256000 + sizes.next() % 700000;
    truth[cls] += double(size);
    const double s = double(size), q = std::exp(-s / R);
    variance[cls] += s * s * q / (1 - q);
    estimate[cls] += double(counter.allocate(size));
  }
  for (int cls = 0; cls < 3; ++cls) {
    EXPECT_NEAR(estimate[cls], truth[cls], 4 * std::sqrt(variance[cls])) << "class " << cls;
  }
}

TEST(AllocationSamplingTest, RateOneRecordsEveryAllocationExactly) {
  // At rate 1 the interposer keeps the countdown at 0: every allocation is sampled.
  uint64_t total = 0, recorded = 0;
  for (uint64_t size = 1; size < 5000; size += 7) {
    total += size;
    recorded += sample_weight(size, 1);
  }
  EXPECT_EQ(recorded, total);
}

TEST(SampledAddressSetTest, InsertRemoveAndTombstoneReuse) {
  std::vector<std::atomic<uint64_t>> slots(64);
  SampledAddressSet set(slots.data(), slots.size());
  EXPECT_FALSE(set.remove(0x1000));
  EXPECT_TRUE(set.insert(0x1000));
  EXPECT_TRUE(set.insert(0x2000));
  EXPECT_EQ(set.live(), 2u);
  EXPECT_TRUE(set.remove(0x1000));
  EXPECT_FALSE(set.remove(0x1000));  // once
  EXPECT_TRUE(set.remove(0x2000));
  EXPECT_EQ(set.live(), 0u);
  // Tombstones are reused: far more inserts than slots, as long as few are live at once.
  for (uint64_t i = 0; i < 10000; ++i) {
    ASSERT_TRUE(set.insert(0x10000 + i * 16));
    ASSERT_TRUE(set.remove(0x10000 + i * 16));
  }
  EXPECT_EQ(set.live(), 0u);
}

TEST(SampledAddressSetTest, FullSetRefusesAndNeverLosesAnEntry) {
  std::vector<std::atomic<uint64_t>> slots(16);
  SampledAddressSet set(slots.data(), slots.size());
  size_t inserted = 0;
  for (uint64_t i = 1; i <= 40; ++i) inserted += set.insert(i * 4096);
  EXPECT_EQ(inserted, 16u);
  size_t removed = 0;
  for (uint64_t i = 1; i <= 40; ++i) removed += set.remove(i * 4096);
  EXPECT_EQ(removed, inserted);
  EXPECT_EQ(set.live(), 0u);
}

TEST(SampledAddressSetTest, ResetEmptiesIt) {
  std::vector<std::atomic<uint64_t>> slots(32);
  SampledAddressSet set(slots.data(), slots.size());
  ASSERT_TRUE(set.insert(0x5550));
  set.reset(slots.data(), slots.size());
  EXPECT_EQ(set.live(), 0u);
  EXPECT_FALSE(set.remove(0x5550));
  SampledAddressSet empty;  // no room: refuses, misses
  EXPECT_FALSE(empty.insert(0x5550));
  EXPECT_FALSE(empty.remove(0x5550));
}

// Four threads allocate (insert) and hand each address to the next thread, which frees
// (removes) it: every address is removed exactly once, by whoever frees it.
TEST(SampledAddressSetTest, AllocateHereFreeThereFromManyThreads) {
  std::vector<std::atomic<uint64_t>> slots(1 << 14);
  SampledAddressSet set(slots.data(), slots.size());
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 20000;
  std::atomic<uint64_t> removed{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) {
        const uint64_t mine = (uint64_t(t + 1) << 40) + i * 16;
        if (!set.insert(mine)) {
          refused.fetch_add(1);
          continue;
        }
        // The "other" thread's block: the neighbour's address of the same index, if present.
        const uint64_t theirs = (uint64_t((t + 1) % kThreads + 1) << 40) + i * 16;
        if (set.remove(theirs)) removed.fetch_add(1);
        if (set.remove(mine)) removed.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(refused.load(), 0u);
  EXPECT_EQ(removed.load(), kThreads * kPerThread);
  EXPECT_EQ(set.live(), 0u);
}

TEST(BlockTagTest, RoundTripsOffsetAndGeneration) {
  for (uint32_t offset : {16u, 32u, 4096u, 1u << 30}) {
    for (uint16_t generation : {uint16_t(0), uint16_t(1), uint16_t(0xFFFF)}) {
      BlockTag tag;
      ASSERT_TRUE(BlockTag::decode(BlockTag::encode(offset, generation), tag));
      EXPECT_EQ(tag.offset, offset);
      EXPECT_EQ(tag.generation, generation);
    }
  }
}

// What glibc keeps before an ordinary block is its chunk's size with three flag bits: never a tag.
TEST(BlockTagTest, NoChunkSizeIsATag) {
  BlockTag tag;
  for (uint64_t size = 0; size < (uint64_t(1) << 20); size += 8) {
    for (uint64_t flags = 0; flags < 8; ++flags) ASSERT_FALSE(BlockTag::decode(size | flags, tag));
  }
  for (unsigned bit = 20; bit < 63; ++bit) {
    ASSERT_FALSE(BlockTag::decode((uint64_t(1) << bit) | 7, tag));
    ASSERT_FALSE(BlockTag::decode(((uint64_t(1) << bit) - 1) & ~uint64_t(7), tag));
  }
  // A word with the tag bit but another magic, or an offset a tag never has, is refused too.
  EXPECT_FALSE(BlockTag::decode(BlockTag::encode(16, 1) ^ (uint64_t(1) << 50), tag));
  EXPECT_FALSE(BlockTag::decode(BlockTag::encode(8, 1), tag));
  EXPECT_FALSE(BlockTag::decode(BlockTag::encode(24, 1), tag));
}

TEST(BlockTagTest, OffsetKeepsTheAlignmentAskedFor) {
  EXPECT_EQ(BlockTag::offset_for(0), 16u);
  EXPECT_EQ(BlockTag::offset_for(8), 16u);
  EXPECT_EQ(BlockTag::offset_for(16), 16u);
  EXPECT_EQ(BlockTag::offset_for(24), 32u);  // glibc's memalign rounds up to a power of two
  EXPECT_EQ(BlockTag::offset_for(64), 64u);
  EXPECT_EQ(BlockTag::offset_for(4096), 4096u);
  EXPECT_EQ(BlockTag::offset_for(size_t(1) << 30), size_t(1) << 30);
  EXPECT_EQ(BlockTag::offset_for((size_t(1) << 30) + 1), 0u);  // not sampled
}

TEST(BlockTagTest, WordBeforeTheBlock) {
  alignas(16) unsigned char memory[32] = {};
  BlockTag::write_before(memory + 16, BlockTag::encode(16, 7));
  BlockTag tag;
  ASSERT_TRUE(BlockTag::decode(BlockTag::word_before(memory + 16), tag));
  EXPECT_EQ(tag.generation, 7);
  for (int i = 16; i < 32; ++i) EXPECT_EQ(memory[i], 0) << "the tag stays before the block";
}

}  // namespace
}  // namespace inprof::internal
