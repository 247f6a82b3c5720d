#include "unwind/frame_pointer_unwinder.h"

#include <gtest/gtest.h>

#include <vector>

namespace inprof::internal {
namespace {

// Builds a synthetic stack copy at a made-up address, with frame records where asked.
class SyntheticStack {
 public:
  static constexpr uint64_t kBase = 0x7ffd00001000;  // the "thread's" SP
  explicit SyntheticStack(size_t bytes) : memory_(bytes, 0) {}

  void put(uint64_t address, uint64_t value) {
    std::memcpy(memory_.data() + (address - kBase), &value, 8);
  }
  // A frame record at `fp`: {next fp, return address}.
  void frame(uint64_t fp, uint64_t next_fp, uint64_t return_address) {
    put(fp, next_fp);
    put(fp + 8, return_address);
  }
  StackSnapshot snapshot(uint64_t pc, uint64_t fp, bool truncated = false) {
    StackSnapshot s;
    s.regs[kRegPc] = pc;
    s.regs[kRegSp] = kBase;
    s.regs[kRegFp] = fp;
    s.buffer = memory_.data();
    s.capacity = memory_.size();
    s.stack_start = kBase;
    s.stack_size = memory_.size();
    s.stack_found = true;
    s.stack_truncated = truncated;
    return s;
  }

 private:
  std::vector<uint8_t> memory_;
};

std::vector<uint64_t> walk(const StackSnapshot& s, size_t max, UnwindOutput* out = nullptr) {
  std::vector<uint64_t> frames(max);
  FramePointerUnwinder unwinder;
  UnwindOutput o = unwinder.unwind(s, frames);
  frames.resize(o.count);
  if (out) *out = o;
  return frames;
}

TEST(FramePointerUnwinder, WalksAChainToItsEnd) {
  SyntheticStack stack(4096);
  const uint64_t b = SyntheticStack::kBase;
  stack.frame(b + 0x40, b + 0x100, 0x401111);
  stack.frame(b + 0x100, b + 0x200, 0x402222);
  stack.frame(b + 0x200, 0, 0x403333);  // outermost: FP cleared
  UnwindOutput out;
  auto frames = walk(stack.snapshot(0x400000, b + 0x40), 64, &out);
  EXPECT_EQ(frames, (std::vector<uint64_t>{0x400000, 0x401111, 0x402222, 0x403333}));
  EXPECT_EQ(out.result, UnwindResult::kComplete);
  EXPECT_TRUE(out.frame_pointer_walk);
  EXPECT_TRUE(out.reached_end);
}

TEST(FramePointerUnwinder, StopsAtAChainThatGoesDownOrLoops) {
  SyntheticStack stack(4096);
  const uint64_t b = SyntheticStack::kBase;
  stack.frame(b + 0x100, b + 0x80, 0x401111);  // points below itself: corrupt
  stack.frame(b + 0x80, b + 0x100, 0x402222);
  UnwindOutput out;
  auto frames = walk(stack.snapshot(0x400000, b + 0x100), 64, &out);
  EXPECT_EQ(frames, (std::vector<uint64_t>{0x400000, 0x401111}));
  EXPECT_FALSE(out.reached_end);

  stack.frame(b + 0x300, b + 0x300, 0x404444);  // points at itself
  frames = walk(stack.snapshot(0x400000, b + 0x300), 64);
  EXPECT_EQ(frames, (std::vector<uint64_t>{0x400000, 0x404444}));
}

TEST(FramePointerUnwinder, NeverReadsOutsideTheCopy) {
  SyntheticStack stack(256);
  const uint64_t b = SyntheticStack::kBase;
  stack.frame(b + 0x10, b + 0x10000, 0x401111);  // next record far beyond the copy
  UnwindOutput out;
  auto frames = walk(stack.snapshot(0x400000, b + 0x10), 64, &out);
  EXPECT_EQ(frames, (std::vector<uint64_t>{0x400000, 0x401111}));
  EXPECT_EQ(out.result, UnwindResult::kComplete);

  // FP below SP, misaligned, or garbage: only the PC.
  EXPECT_EQ(walk(stack.snapshot(0x400000, b - 0x100), 64).size(), 1u);
  EXPECT_EQ(walk(stack.snapshot(0x400000, b + 0x13), 64).size(), 1u);
  EXPECT_EQ(walk(stack.snapshot(0x400000, 0xdeadbeef), 64).size(), 1u);
}

TEST(FramePointerUnwinder, ReportsTruncationAtTheEndOfACutCopy) {
  SyntheticStack stack(256);
  const uint64_t b = SyntheticStack::kBase;
  stack.frame(b + 0x10, b + 0xf8, 0x401111);  // the next record straddles the copy's end
  UnwindOutput out;
  walk(stack.snapshot(0x400000, b + 0x10, /*truncated=*/true), 64, &out);
  EXPECT_EQ(out.result, UnwindResult::kTruncated);
}

TEST(FramePointerUnwinder, HonoursTheDepthLimit) {
  SyntheticStack stack(4096);
  const uint64_t b = SyntheticStack::kBase;
  for (uint64_t i = 0; i < 20; ++i)
    stack.frame(b + 0x10 + i * 0x20, b + 0x30 + i * 0x20, 0x401000 + i);
  UnwindOutput out;
  auto frames = walk(stack.snapshot(0x400000, b + 0x10), 8, &out);
  EXPECT_EQ(frames.size(), 8u);
  EXPECT_EQ(out.result, UnwindResult::kDepthLimit);
}

TEST(FramePointerUnwinder, WithoutAStackGivesThePcOnly) {
  StackSnapshot s;
  s.regs[kRegPc] = 0x401234;
  s.stack_found = false;
  EXPECT_EQ(walk(s, 16), (std::vector<uint64_t>{0x401234}));
}

}  // namespace
}  // namespace inprof::internal
