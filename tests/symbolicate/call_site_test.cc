// Callers are described by their call instruction (return address - 1): its line, its inline
// chain, and the address the Firefox Profiler expects of a stack-walked frame (the "nudged"
// return address, src/types/profile.ts, FrameTable.address).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "call_site_targets.h"
#include "symbolize/module_symbolizer.h"
#include "test_support.h"
#include "test_targets.h"

namespace {

using namespace inprof::internal;
using inprof::symbolicate::AddressSymbol;
using inprof::symbolicate::ModuleSymbolizer;
using symtest::FrameView;

class CallSiteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    self_ = symtest::self_module();
    std::string why;
    symbolizer_ = ModuleSymbolizer::open(self_, &why);
    ASSERT_TRUE(symbolizer_) << why;
  }

  // What the module's own reader says at a runtime address, looked up exactly there.
  AddressSymbol at(uint64_t address) { return symbolizer_->symbolize(address - self_.load_bias); }

  // Symbolicates one sample (leaf first) with `module` as the only module; its stack, root first.
  std::vector<FrameView> convert(const std::vector<uint64_t>& frames, const ModuleRecord& module) {
    symtest::DumpFile d(dir_.path("t.inprof"));
    d.process(symtest::test_process());
    d.module(module);
    d.sample(1, 1'000'000, frames);
    d.close();
    std::string err;
    EXPECT_EQ(symtest::symbolicate_in_process(dir_.path("t.inprof"), dir_.path("t.json"), &err), 0)
        << err;
    EXPECT_TRUE(symtest::load_json(dir_.path("t.json"), &doc_));
    for (const std::string& p : symtest::check_structure(doc_)) ADD_FAILURE() << p;
    return symtest::sample_stack(doc_, 0, 0);
  }

  ModuleRecord self_;
  std::unique_ptr<ModuleSymbolizer> symbolizer_;
  symtest::TempDir dir_;
  rapidjson::Document doc_;
};

TEST_F(CallSiteTest, CallerLineIsTheCallNotTheNextStatement) {
  const uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  const uint64_t ra = callsite::call_then_next_line();
  // The premise: at the return address itself the line is another one.
  AddressSymbol at_ra = at(ra);
  ASSERT_FALSE(at_ra.frames.empty());
  ASSERT_NE(at_ra.frames.back().line, static_cast<uint32_t>(callsite::kCallLine));

  std::vector<FrameView> s = convert({leaf, ra}, self_);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].func, "callsite::call_then_next_line()");
  EXPECT_EQ(s[0].line, callsite::kCallLine);
  EXPECT_EQ(s[0].inline_depth, 0);
  // The caller's address points into the call instruction; the leaf's is exact.
  EXPECT_EQ(s[0].address, static_cast<int64_t>(ra - 1 - self_.start));
  EXPECT_EQ(s[1].address, static_cast<int64_t>(leaf - self_.start));
}

TEST_F(CallSiteTest, CallEndingAnInlinedFunctionKeepsItsInlineChain) {
  const uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  const uint64_t ra = callsite::outer_after_inline();
  // The premise: the return address is already outside the inlinee.
  AddressSymbol at_ra = at(ra);
  ASSERT_EQ(at_ra.frames.size(), 1u);
  ASSERT_EQ(at_ra.frames[0].function, "callsite::outer_after_inline()");

  std::vector<FrameView> s = convert({leaf, ra}, self_);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].func, "callsite::outer_after_inline()");
  EXPECT_EQ(s[0].inline_depth, 0);
  EXPECT_EQ(s[0].line, callsite::kOuterCallsInlineeLine);
  EXPECT_EQ(s[1].func, "callsite::inlined_tail_call()");
  EXPECT_EQ(s[1].inline_depth, 1);
  EXPECT_EQ(s[1].line, callsite::kInlineeCallLine);
  // Both levels of the inline stack share the call's address (the viewer requires it).
  EXPECT_EQ(s[0].address, static_cast<int64_t>(ra - 1 - self_.start));
  EXPECT_EQ(s[1].address, s[0].address);
  EXPECT_EQ(s[2].func, "symtest::leaf_function(int)");
}

TEST_F(CallSiteTest, ReturnAddressJustPastTheModuleBelongsToIt) {
  // A call that is the last instruction of a module's mapping returns to the first address past
  // it: the caller is still in that module.
  const uint64_t ra = callsite::call_then_next_line();
  ModuleRecord cut = self_;
  cut.end = ra;
  const uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  std::vector<FrameView> s = convert({leaf, ra}, cut);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].func, "callsite::call_then_next_line()");
  EXPECT_EQ(s[0].line, callsite::kCallLine);
  EXPECT_EQ(s[0].address, static_cast<int64_t>(ra - 1 - self_.start));
}

}  // namespace
