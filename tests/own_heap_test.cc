// The profiler threads' own heap (lib/memory/own_heap.h): blocks are usable, recognised by address
// (malloc's never are), reused after release, and safe to use from several threads at once.
#include "memory/own_heap.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace inprof::internal {
namespace {

TEST(OwnHeap, BlocksOfEverySizeAreUsableAlignedAndRecognised) {
  std::vector<std::pair<void*, size_t>> blocks;
  for (size_t bytes : {0, 1, 15, 16, 17, 100, 128, 129, 1000, 4096, 16384, 16385, 70000, 1 << 20}) {
    void* block = own_heap_allocate(bytes, 16);
    ASSERT_NE(block, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % 16, 0u);
    EXPECT_TRUE(own_heap_owns(block));
    std::memset(block, 0xab, bytes);
    blocks.emplace_back(block, bytes);
  }
  for (auto [block, bytes] : blocks) {
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(static_cast<uint8_t*>(block)[i], 0xab);
    EXPECT_TRUE(own_heap_release(block));
  }
}

TEST(OwnHeap, MallocBlocksAreNotItsOwn) {
  // Blocks of malloc's, small and mapped ones, may lie next to the heap's own 64 KiB units.
  std::vector<void*> own, foreign;
  for (int i = 0; i < 200; ++i) {
    own.push_back(own_heap_allocate(i % 2 ? 20000 : 48, 16));
    foreign.push_back(std::malloc(i % 3 ? 40 : 200000));
  }
  for (void* block : foreign) {
    EXPECT_FALSE(own_heap_owns(block));
    EXPECT_FALSE(own_heap_release(block));
    std::free(block);
  }
  for (void* block : own) EXPECT_TRUE(own_heap_release(block));
  EXPECT_FALSE(own_heap_owns(nullptr));
}

TEST(OwnHeap, LargeAlignmentsAreHonoured) {
  for (size_t alignment : {32, 64, 4096, 65536}) {
    void* block = own_heap_allocate(100, alignment);
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % alignment, 0u);
    EXPECT_TRUE(own_heap_release(block));
  }
}

TEST(OwnHeap, ReleasedBlocksAreReusedAndLargeOnesUnmapped) {
  std::vector<void*> blocks;
  for (int i = 0; i < 1000; ++i) blocks.push_back(own_heap_allocate(64, 16));
  const size_t mapped = own_heap_mapped_bytes();
  for (void* block : blocks) own_heap_release(block);
  for (void*& block : blocks) block = own_heap_allocate(64, 16);
  EXPECT_EQ(own_heap_mapped_bytes(), mapped);  // the same blocks again
  for (void* block : blocks) own_heap_release(block);

  void* large = own_heap_allocate(1 << 20, 16);
  EXPECT_GE(own_heap_mapped_bytes(), mapped + (1 << 20));
  own_heap_release(large);
  EXPECT_EQ(own_heap_mapped_bytes(), mapped);
}

TEST(OwnHeap, ManyThreadsAllocateAndReleaseTogether) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      std::mt19937 random(static_cast<unsigned>(t));
      std::vector<std::pair<uint8_t*, size_t>> live;
      for (int i = 0; i < 20000; ++i) {
        if (!live.empty() && random() % 2) {
          const size_t at = random() % live.size();
          auto [block, bytes] = live[at];
          for (size_t k = 0; k < bytes; k += 61) ASSERT_EQ(block[k], static_cast<uint8_t>(t));
          ASSERT_TRUE(own_heap_release(block));
          live[at] = live.back();
          live.pop_back();
        } else {
          const size_t bytes = random() % 3 == 0 ? 16384 + random() % 100000 : random() % 3000;
          auto* block = static_cast<uint8_t*>(own_heap_allocate(bytes, 16));
          ASSERT_NE(block, nullptr);
          std::memset(block, t, bytes);
          live.emplace_back(block, bytes);
        }
      }
      for (auto [block, bytes] : live) ASSERT_TRUE(own_heap_release(block));
    });
  }
  for (auto& thread : threads) thread.join();
}

}  // namespace
}  // namespace inprof::internal
