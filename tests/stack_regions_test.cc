#include <gtest/gtest.h>

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

}  // namespace
}  // namespace inprof::internal
