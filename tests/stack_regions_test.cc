#include <gtest/gtest.h>
#include <pthread.h>

#include "stack_regions_linux.h"

namespace inprof::internal {
namespace {

TEST(StackRegions, KeepsWritableMappingsAndMarksTheMainStack) {
  const char* maps =
      "555555554000-555555556000 r--p 00000000 08:01 123  /usr/bin/app\n"
      "555555556000-555555558000 r-xp 00002000 08:01 123  /usr/bin/app\n"
      "555555559000-55555555a000 rw-p 00004000 08:01 123  /usr/bin/app\n"
      "7ffff7000000-7ffff7800000 rw-p 00000000 00:00 0\n"
      "7ffff7800000-7ffff7801000 ---p 00000000 00:00 0\n"
      "7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0                          [stack]\n"
      "garbage line\n"
      "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]";
  auto regions = parse_stack_regions(maps);
  ASSERT_EQ(regions.size(), 3u);
  EXPECT_EQ(regions[0].begin, 0x555555559000u);
  EXPECT_FALSE(regions[1].main_stack);
  EXPECT_TRUE(regions[2].main_stack);
  EXPECT_EQ(find_stack_region(regions.data(), regions.size(), 0x7ffff7000000), &regions[1]);
  EXPECT_EQ(find_stack_region(regions.data(), regions.size(), 0x7ffff77fffff), &regions[1]);
  EXPECT_EQ(find_stack_region(regions.data(), regions.size(), 0x7ffff7800000), nullptr);
  EXPECT_EQ(find_stack_region(regions.data(), regions.size(), 0x7ffffffff000 - 8), &regions[2]);
  EXPECT_EQ(find_stack_region(regions.data(), regions.size(), 0x1000), nullptr);
}

TEST(StackRegions, MarksMappingsRightAboveAGuard) {
  const char* maps =
      "7ffff6ff0000-7ffff6ff1000 ---p 00000000 00:00 0\n"
      "7ffff6ff1000-7ffff6ff9000 rw-p 00000000 00:00 0\n"  // a thread stack over its guard
      "7ffff6ff9000-7ffff6ffa000 rw-p 00000000 00:00 0\n"  // above a writable one
      "7ffff6ffb000-7ffff6ffc000 ---p 00000000 00:00 0\n"
      "7ffff6ffd000-7ffff6ffe000 rw-p 00000000 00:00 0\n"  // a gap between
      "7ffff6ffe000-7ffff6fff000 ---p 00000000 00:00 0\n"
      "7ffff6fff000-7ffff7000000 rw-p 00000000 00:00 0  [heap]\n";
  auto regions = parse_stack_regions(maps);
  ASSERT_EQ(regions.size(), 4u);
  EXPECT_TRUE(regions[0].guarded);
  EXPECT_FALSE(regions[1].guarded);
  EXPECT_FALSE(regions[2].guarded);
  EXPECT_FALSE(regions[3].guarded);
}

TEST(StackRegions, ReadsThisProcess) {
  std::vector<StackRegion> regions;
  ASSERT_TRUE(read_stack_regions(&regions));
  int local = 0;
  const StackRegion* r =
      find_stack_region(regions.data(), regions.size(), reinterpret_cast<uint64_t>(&local));
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->main_stack);  // gtest runs tests on the main thread
}

// The kernel's answer for one address is the line of the table that holds it (where the kernel
// can answer: Linux 6.11). Asked for the main stack, a thread's stack (over its guard page),
// and for an address nothing maps.
void expect_query_matches_table(uint64_t address) {
  StackRegion asked;
  const RegionQuery result = query_stack_region(address, &asked);
  if (result == RegionQuery::kUnsupported) GTEST_SKIP() << "no PROCMAP_QUERY in this kernel";
  std::vector<StackRegion> regions;
  ASSERT_TRUE(read_stack_regions(&regions));
  const StackRegion* listed = find_stack_region(regions.data(), regions.size(), address);
  ASSERT_NE(listed, nullptr);
  ASSERT_EQ(result, RegionQuery::kFound);
  EXPECT_EQ(asked.begin, listed->begin);
  EXPECT_EQ(asked.end, listed->end);
  EXPECT_EQ(asked.main_stack, listed->main_stack);
  EXPECT_FALSE(asked.guarded);  // known from a listing only
}

TEST(StackRegions, TheKernelsAnswerForOneAddressIsTheTablesLine) {
  int local = 0;
  expect_query_matches_table(reinterpret_cast<uint64_t>(&local));
  pthread_t thread;
  ASSERT_EQ(pthread_create(
                &thread, nullptr,
                [](void*) -> void* {
                  int on_thread = 0;
                  expect_query_matches_table(reinterpret_cast<uint64_t>(&on_thread));
                  return nullptr;
                },
                nullptr),
            0);
  pthread_join(thread, nullptr);
  StackRegion none;
  const RegionQuery unmapped = query_stack_region(0x1000, &none);
  EXPECT_NE(unmapped, RegionQuery::kFound);
}

TEST(StackRegions, ARegionPutInTheTableReplacesTheEntriesItOverlaps) {
  StackRegionTable table;
  for (const StackRegion& r : std::vector<StackRegion>{
           {0x1000, 0x2000}, {0x3000, 0x4000}, {0x5000, 0x6000}, {0x8000, 0x9000}}) {
    table.insert(r);
  }
  ASSERT_EQ(table.size(), 4u);
  table.insert({0x3800, 0x5800, false, true});  // over two of them
  ASSERT_EQ(table.size(), 3u);
  ASSERT_NE(table.find(0x3800), nullptr);
  EXPECT_EQ(table.find(0x3800)->begin, 0x3800u);
  EXPECT_TRUE(table.find(0x57ff)->guarded);
  EXPECT_EQ(table.find(0x3000), nullptr);  // its old entry is gone
  table.insert({0x6000, 0x7000});          // between two
  table.insert({0x100, 0x200});            // first
  table.insert({0xa000, 0xb000});          // last
  ASSERT_EQ(table.size(), 6u);
  EXPECT_EQ(table.find(0x6800)->begin, 0x6000u);
  EXPECT_EQ(table.find(0x7000), nullptr);
  EXPECT_EQ(table.find(0x100)->end, 0x200u);
  EXPECT_EQ(table.find(0xff), nullptr);
  EXPECT_EQ(table.find(0xb000), nullptr);
  // A full read replaces it: this thread's stack is there.
  ASSERT_TRUE(table.read());
  int local = 0;
  EXPECT_NE(table.find(reinterpret_cast<uint64_t>(&local)), nullptr);
}

}  // namespace
}  // namespace inprof::internal
