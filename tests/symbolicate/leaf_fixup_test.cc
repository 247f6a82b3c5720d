#include "symbolize/leaf_fixup.h"

#include <gtest/gtest.h>

#include "symbolize/module_symbolizer.h"
#include "test_support.h"
#include "test_targets.h"

namespace {

using inprof::internal::kSampleFramePointerWalk;
using inprof::internal::LeafCandidate;
using inprof::symbolicate::missing_leaf_caller;
using inprof::symbolicate::ModuleSymbolizer;

TEST(LeafFixup, InsertsTheCandidateAtTheCfiSlot) {
  std::vector<uint64_t> frames = {0x100, 0x300};
  std::vector<LeafCandidate> candidates = {{0, 0x250}, {2, 0x260}};
  EXPECT_EQ(missing_leaf_caller(frames, candidates, 2u), std::optional<uint64_t>(0x260));
  EXPECT_EQ(missing_leaf_caller(frames, candidates, 0u), std::optional<uint64_t>(0x250));
}

TEST(LeafFixup, ChangesNothingWithoutAMatchingSlotOrCfi) {
  std::vector<uint64_t> frames = {0x100, 0x300};
  std::vector<LeafCandidate> candidates = {{1, 0x250}};
  EXPECT_EQ(missing_leaf_caller(frames, candidates, 0u), std::nullopt);
  EXPECT_EQ(missing_leaf_caller(frames, candidates, std::nullopt), std::nullopt);
}

TEST(LeafFixup, DoesNotDuplicateACallerTheWalkFound) {
  std::vector<uint64_t> frames = {0x100, 0x300};
  std::vector<LeafCandidate> candidates = {{0, 0x300}};
  EXPECT_EQ(missing_leaf_caller(frames, candidates, 0u), std::nullopt);
}

// aarch64: a function without its frame record returns through the link register, recorded as
// candidate slot 255 beside the stack words.
TEST(LeafFixup, LinkRegisterCandidateIsTheCallerWhenCfiSaysSo) {
  using inprof::internal::kLeafCandidateLinkRegister;
  std::vector<uint64_t> frames = {0x100, 0x300};
  std::vector<LeafCandidate> candidates = {{0, 0x250}, {kLeafCandidateLinkRegister, 0x280}};
  EXPECT_EQ(missing_leaf_caller(frames, candidates, unsigned{kLeafCandidateLinkRegister}),
            std::optional<uint64_t>(0x280));
  EXPECT_EQ(missing_leaf_caller(frames, candidates, 0u), std::optional<uint64_t>(0x250));
}

TEST(LeafFixup, SingleFrameStackGetsItsCaller) {
  std::vector<uint64_t> frames = {0x100};
  std::vector<LeafCandidate> candidates = {{0, 0x300}};
  EXPECT_EQ(missing_leaf_caller(frames, candidates, 0u), std::optional<uint64_t>(0x300));
}

#if defined(__x86_64__)
TEST(ModuleSymbolizerCfi, FunctionEntryHasTheReturnAddressAtSlotZero) {
  auto module = symtest::self_module();
  std::string why;
  auto sym = ModuleSymbolizer::open(module, &why);
  ASSERT_TRUE(sym) << why;
  // At a function's first instruction the CFA is rsp + 8 whatever the compiler did.
  uint64_t entry = reinterpret_cast<uintptr_t>(&symtest::leaf_function) - module.load_bias;
  EXPECT_EQ(sym->return_address_slot(entry, /*aarch64=*/false), std::optional<unsigned>(0));
}

// End to end: a frame-pointer walk that missed the leaf's caller gets it back.
TEST(LeafFixupEndToEnd, InsertsTheMissingCallerOnlyWhenTheCfiAgrees) {
  symtest::TempDir dir;
  std::string dump = dir.path("leaf.inprof");
  std::string out = dir.path("leaf.json");
  uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  uint64_t caller_ra = symtest::caller_function();
  uint64_t outer_ra = symtest::outer_with_inline();
  {
    symtest::DumpFile d(dump);
    d.process(symtest::test_process());
    d.module(symtest::self_module());
    // Missing caller at slot 0: inserted.
    d.sample(1, 1000, {leaf, outer_ra}, kSampleFramePointerWalk, std::nullopt,
             {{0, caller_ra}, {3, outer_ra}});
    // The candidate sits in a slot the CFI does not name: unchanged.
    d.sample(1, 2000, {leaf, outer_ra}, kSampleFramePointerWalk, std::nullopt, {{2, caller_ra}});
    // Same stack without the frame-pointer flag: unchanged.
    d.sample(1, 3000, {leaf, outer_ra}, 0, std::nullopt, {{0, caller_ra}});
    d.end(4000);
    d.close();
  }
  std::string err;
  ASSERT_EQ(symtest::symbolicate_in_process(dump, out, &err), 0) << err;
  rapidjson::Document doc;
  ASSERT_TRUE(symtest::load_json(out, &doc));
  EXPECT_TRUE(symtest::check_structure(doc).empty());

  auto names = [&](size_t i) {
    std::vector<std::string> v;
    for (const auto& f : symtest::sample_stack(doc, 0, i)) v.push_back(f.func);
    return v;
  };
  std::vector<std::string> fixed = names(0);
  ASSERT_EQ(fixed.size(), 4u);  // outer, inlined helper, inserted caller, leaf
  EXPECT_EQ(fixed[2], "symtest::caller_function()");
  EXPECT_EQ(fixed[3], "symtest::leaf_function(int)");
  EXPECT_EQ(names(1).size(), 3u);
  EXPECT_EQ(names(2).size(), 3u);
}
#endif

}  // namespace
