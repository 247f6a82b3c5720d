// aarch64 PLT stubs recognised by their instructions (the module's section headers are never
// read): checked on any host, the instruction words being data here.
#include <gtest/gtest.h>

#include <vector>

#include "plt_unwind_linux.h"

namespace inprof::internal {
namespace {

constexpr uint32_t kAdrpX16 = 0x90000010u | (3u << 29) | (0x1234u << 5);
constexpr uint32_t kLdrX17 = 0xf9400211u | (0x4fu << 10);
constexpr uint32_t kAddX16 = 0x91000210u | (0x278u << 10);
constexpr uint32_t kBrX17 = 0xd61f0220u;
constexpr uint32_t kPush = 0xa9bf7bf0u;
constexpr uint32_t kNop = 0xd503201fu;

TEST(PltStub, PositionsInPlt0AndPltN) {
  // PLT0 (32 bytes) then two PLTn, at 0x10000; then code that is no stub.
  const std::vector<uint32_t> words = {kPush,    kAdrpX16, kLdrX17,  kAddX16, kBrX17,  kNop,
                                       kNop,     kNop,     kAdrpX16, kLdrX17, kAddX16, kBrX17,
                                       kAdrpX16, kLdrX17,  kAddX16,  kBrX17,  kNop,    kAddX16};
  RegionView view;
  view.add(0x10000, words.data(), words.size() * 4);
  EXPECT_EQ(aarch64_plt_position(view, 0x10000), PltPosition::kLinkRegister);  // before the push
  for (uint64_t pc = 0x10004; pc < 0x10014; pc += 4) {
    EXPECT_EQ(aarch64_plt_position(view, pc), PltPosition::kPushed) << std::hex << pc;
  }
  for (uint64_t pc = 0x10020; pc < 0x10040; ++pc) {
    EXPECT_EQ(aarch64_plt_position(view, pc), PltPosition::kLinkRegister) << std::hex << pc;
  }
  EXPECT_EQ(aarch64_plt_position(view, 0x10040), PltPosition::kNone);
  EXPECT_EQ(aarch64_plt_position(view, 0x10044), PltPosition::kNone);
  EXPECT_EQ(aarch64_plt_position(view, 0x20000), PltPosition::kNone);  // outside the view
}

}  // namespace
}  // namespace inprof::internal
