// Blocks from large_alloc.h arrive zero-filled, and types whose value-initialised form is all
// zero bytes are not constructed again: writing zeros over a mapped block would fault in every
// page of it at once (a session's 256 KiB stack buffer, its 320 KiB rule cache), most of what
// starting a session cost.
#include "memory/large_alloc.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "unwind/dwarf/rule_cache.h"

namespace inprof::internal {
namespace {

// Pages of [block, block + bytes) resident in memory.
size_t resident_pages(const void* block, size_t bytes) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = reinterpret_cast<uintptr_t>(block) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(block) + bytes;
  std::vector<unsigned char> in_core((end - first + page - 1) / page);
  EXPECT_EQ(mincore(reinterpret_cast<void*>(first), end - first, in_core.data()), 0);
  size_t resident = 0;
  for (unsigned char c : in_core) resident += c & 1;
  return resident;
}

TEST(LargeAlloc, AMappedByteArrayIsNotWrittenUntilUsed) {
  constexpr size_t kBytes = 1 << 20;
  auto array = make_mapped_array<uint8_t>(kBytes);
  // The header shares the first page; nothing else is touched.
  EXPECT_LE(resident_pages(array.get(), kBytes), 1u);
  EXPECT_EQ(array[0], 0);
  EXPECT_EQ(array[kBytes - 1], 0);
  auto large = make_large_array<uint64_t>(kBytes / 8);
  EXPECT_LE(resident_pages(large.get(), kBytes), 1u);
}

TEST(LargeAlloc, TheRuleCacheStartsEmptyFromZeroedMemory) {
  RuleCache cache;
  EXPECT_EQ(cache.find(0x1234, 0), nullptr);
  EXPECT_EQ(cache.find(0, 0), nullptr);  // an all-zero slot is empty, not a rule for pc 0
  UnwindRule rule;
  rule.kind = RuleKind::kSimple;
  cache.insert(0x1234, 3, rule);
  ASSERT_NE(cache.find(0x1234, 3), nullptr);
  EXPECT_EQ(cache.find(0x1234, 3)->kind, RuleKind::kSimple);
}

TEST(LargeAlloc, ARuleCacheSlotValueInitialisedIsAllZeroBytes) {
  // What lets the cache skip its construction (kZeroBytesAreValueInitialized).
  alignas(RuleCacheSlot) unsigned char bytes[sizeof(RuleCacheSlot)];
  std::memset(bytes, 0xa5, sizeof bytes);
  ::new (static_cast<void*>(bytes)) RuleCacheSlot();
  for (unsigned char b : bytes) ASSERT_EQ(b, 0);
}

struct NonZeroDefault {
  int value = 7;
};

TEST(LargeAlloc, TypesWithOtherDefaultsAreStillConstructed) {
  auto array = make_large_array<NonZeroDefault>(100000);
  EXPECT_EQ(array[0].value, 7);
  EXPECT_EQ(array[99999].value, 7);
  auto mapped = make_mapped_array<NonZeroDefault>(3);
  EXPECT_EQ(mapped[2].value, 7);
}

}  // namespace
}  // namespace inprof::internal
