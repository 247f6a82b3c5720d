// Label scopes' records in a thread's stack: what a copy the kernel took tells of its labels.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "inprof/markers.h"
#include "inprof/profiler.h"
#include "markers/label_stack.h"

namespace inprof::internal {
namespace {

// A fake stack: `words` 8-byte words that were at `address`, with records placed in it.
struct FakeStack {
  uint64_t address;
  std::vector<uint64_t> words;
  FakeStack(uint64_t at, size_t n) : address(at), words(n, 0) {}
  void put(size_t word, const char* name, uint16_t category) {
    words[word] = kLabelRecordMagic ^ (address + word * 8);
    words[word + 1] = reinterpret_cast<uint64_t>(name);
    words[word + 2] = category;
  }
  size_t find(LabelEntry* out, size_t max, size_t skip_bytes = 0) const {
    return find_label_records(reinterpret_cast<const uint8_t*>(words.data()) + skip_bytes,
                              words.size() * 8 - skip_bytes, address + skip_bytes, out, max);
  }
};

const char kOuter[] = "outer";
const char kMiddle[] = "middle";
const char kInner[] = "inner";

TEST(LabelRecords, FoundOutermostFirstAtTheirAddresses) {
  FakeStack stack(0x7ffc'0000'1000, 64);
  stack.put(4, kInner, 1);  // nearest SP: the innermost
  stack.put(20, kMiddle, 2);
  stack.put(50, kOuter, 3);
  LabelEntry out[kMaxLabelDepth];
  ASSERT_EQ(stack.find(out, kMaxLabelDepth), 3u);
  EXPECT_EQ(out[0].name, kOuter);
  EXPECT_EQ(out[0].address, stack.address + 50 * 8);
  EXPECT_EQ(out[0].category, 3);
  EXPECT_EQ(out[1].name, kMiddle);
  EXPECT_EQ(out[2].name, kInner);
  EXPECT_EQ(out[2].address, stack.address + 4 * 8);
}

TEST(LabelRecords, WithMoreThanRoomTheOutermostAreKept) {
  FakeStack stack(0x7ffc'0000'1000, 64);
  stack.put(4, kInner, 1);
  stack.put(20, kMiddle, 2);
  stack.put(50, kOuter, 3);
  LabelEntry out[2];
  ASSERT_EQ(stack.find(out, 2), 2u);
  EXPECT_EQ(out[0].name, kOuter);
  EXPECT_EQ(out[1].name, kMiddle);
}

TEST(LabelRecords, ACopyNotStartingOnAWordBoundaryStillFindsThem) {
  FakeStack stack(0x7ffc'0000'1000, 64);
  stack.put(20, kMiddle, 2);
  LabelEntry out[kMaxLabelDepth];
  ASSERT_EQ(stack.find(out, kMaxLabelDepth, 5), 1u);  // the copy starts at SP = address + 5
  EXPECT_EQ(out[0].name, kMiddle);
}

TEST(LabelRecords, ARecordElsewhereOrClearedOrCutIsNotALabel) {
  FakeStack stack(0x7ffc'0000'1000, 66);
  stack.put(10, kInner, 1);
  // The same record bytes at another address (a copy of a record, or a record moved) do not
  // match their address.
  std::memcpy(&stack.words[30], &stack.words[10], 24);
  stack.words[10] = 0;       // cleared when its scope ended
  stack.put(62, kOuter, 3);  // its last word lies beyond the copy
  stack.words.resize(64);
  LabelEntry out[kMaxLabelDepth];
  EXPECT_EQ(stack.find(out, kMaxLabelDepth), 0u);
}

TEST(LabelRecords, ALabelScopeOutsideASessionKeepsNoRecord) {
  LabelScope scope("not-recording");
  uint64_t words[3];
  std::memcpy(words, &scope, sizeof(words));
  EXPECT_EQ(words[0], 0u);
}

}  // namespace
}  // namespace inprof::internal
