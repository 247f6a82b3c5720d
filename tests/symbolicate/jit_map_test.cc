// JIT symbol maps (perf's /tmp/perf-<pid>.map) copied into the dump: the parser on its own, then
// whole dumps whose frames lie in JIT code.
#include "read/jit_map.h"

#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <string>

#include "symbolicate.h"
#include "test_support.h"
#include "test_targets.h"

namespace {

using inprof::symbolicate::JitMap;
using namespace inprof::internal;
using symtest::FrameView;

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%" PRIx64, v);
  return buf;
}

std::string name_at(const JitMap& map, uint64_t address) {
  const std::string* name = map.find(address);
  return name ? *name : "<none>";
}

TEST(JitMapTest, FindsNamesByRangeAndKeepsThemAsWritten) {
  JitMap map;
  map.add_piece(
      "1000 100 LazyCompile:*fib /tmp/x.js:3\n2000 10 Builtin: ArgumentsAdaptorTrampoline\n");
  EXPECT_EQ(map.range_count(), 2u);
  EXPECT_EQ(map.malformed_lines(), 0u);
  EXPECT_EQ(name_at(map, 0x1000), "LazyCompile:*fib /tmp/x.js:3");
  EXPECT_EQ(name_at(map, 0x10ff), "LazyCompile:*fib /tmp/x.js:3");
  EXPECT_EQ(name_at(map, 0x1100), "<none>");  // one past the end
  EXPECT_EQ(name_at(map, 0xfff), "<none>");
  EXPECT_EQ(name_at(map, 0x200f), "Builtin: ArgumentsAdaptorTrampoline");
  EXPECT_EQ(name_at(map, 0x2010), "<none>");
}

TEST(JitMapTest, SkipsMalformedLines) {
  JitMap map;
  map.add_piece(
      "\n"                            // blank: ignored, not counted
      "zz 10 bad_start\n"             // not hex
      "1000\n"                        // no size
      "1000 10\n"                     // no name
      "1000 0 empty_code\n"           // no bytes
      "ffffffffffffff00 200 wraps\n"  // past the end of the address space
      "10000000000000000 10 too_wide\n"
      "1000x 10 junk_after_start\n"
      "3000 20 good\r\n"  // CRLF
      "4000 10 last_without_newline");
  EXPECT_EQ(map.lines(), 9u);
  EXPECT_EQ(map.malformed_lines(), 7u);
  EXPECT_EQ(map.range_count(), 2u);
  EXPECT_EQ(name_at(map, 0x3010), "good");
  EXPECT_EQ(name_at(map, 0x4000), "last_without_newline");
  EXPECT_EQ(name_at(map, 0x1000), "<none>");
}

TEST(JitMapTest, LaterEntriesWinWhereRangesOverlap) {
  JitMap map;
  map.add_piece("1000 100 old_a\n2000 100 old_b\n3000 100 old_c\n");
  // Splits old_a, covers old_b entirely, and cuts the front of old_c.
  map.add_piece("1080 2000 new\n");
  EXPECT_EQ(name_at(map, 0x1000), "old_a");
  EXPECT_EQ(name_at(map, 0x107f), "old_a");
  EXPECT_EQ(name_at(map, 0x1080), "new");
  EXPECT_EQ(name_at(map, 0x2050), "new");
  EXPECT_EQ(name_at(map, 0x307f), "new");
  EXPECT_EQ(name_at(map, 0x3080), "old_c");
  EXPECT_EQ(name_at(map, 0x30ff), "old_c");
  EXPECT_EQ(name_at(map, 0x3100), "<none>");
  // Inside an older, larger range: both of its ends survive.
  map.add_piece("2800 10 inner\n");
  EXPECT_EQ(name_at(map, 0x27ff), "new");
  EXPECT_EQ(name_at(map, 0x2808), "inner");
  EXPECT_EQ(name_at(map, 0x2810), "new");
  map.add_piece("1010 10 innermost\n");
  EXPECT_EQ(name_at(map, 0x100f), "old_a");
  EXPECT_EQ(name_at(map, 0x1010), "innermost");
  EXPECT_EQ(name_at(map, 0x1020), "old_a");
  // The same range emitted again takes the new name.
  map.add_piece("3000 100 old_c_again\n");
  EXPECT_EQ(name_at(map, 0x3000), "old_c_again");
  EXPECT_EQ(name_at(map, 0x30ff), "old_c_again");
}

TEST(JitMapTest, CutsOverlongNames) {
  JitMap map;
  map.add_piece("1000 10 " + std::string(JitMap::kMaxNameLength + 100, 'n') + "\n");
  ASSERT_NE(map.find(0x1000), nullptr);
  EXPECT_EQ(map.find(0x1000)->size(), JitMap::kMaxNameLength);
}

class JitSymbolicateTest : public ::testing::Test {
 protected:
  std::string dump_path() const { return dir_.path("jit.inprof"); }

  void convert() {
    std::string out = dir_.path("jit.json");
    ASSERT_EQ(symtest::symbolicate_in_process(dump_path(), out, &err_), 0) << err_;
    ASSERT_TRUE(symtest::load_json(out, &doc_));
    for (const auto& p : symtest::check_structure(doc_)) ADD_FAILURE() << p;
  }

  int category_count(const std::string& name) {
    int n = 0;
    for (const auto& c : doc_["meta"]["categories"].GetArray()) n += name == c["name"].GetString();
    return n;
  }

  symtest::TempDir dir_;
  rapidjson::Document doc_;
  std::string err_;
};

// Far below any module of the test: the dump has the test executable only.
constexpr uint64_t kJitBase = 0x10000000;

TEST_F(JitSymbolicateTest, NamesFramesInNoModuleWithTheJitCategory) {
  uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    d.module(symtest::self_module());
    d.thread_start(1, 0, "main", kThreadMain);
    // The map arrives in pieces; it may also name code inside a module, which is ignored there.
    d.jit_map("10000000 100 LazyCompile:*fib /tmp/x.js:3\nnot a map line\n");
    d.jit_map("10000100 100 Builtin: JSEntry\n" + hex(leaf - 0x10) + " 1000 shadow\n");
    // Leaf at the start of JSEntry; its caller's return address is the end of fib (looked up at
    // address - 1, so still fib); then a native frame and an address no one knows.
    d.sample(1, 1'000'000, {kJitBase + 0x100, kJitBase + 0x100, kJitBase + 0x10000});
    d.sample(1, 2'000'000, {leaf, kJitBase + 0x10});
    d.end(3'000'000);
    d.close();
  }
  convert();
  EXPECT_EQ(category_count("JIT"), 1);
  auto s = symtest::sample_stack(doc_, 0, 0);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].func, "0x10010000");
  EXPECT_EQ(s[0].category, "Native");
  EXPECT_EQ(s[1].func, "LazyCompile:*fib /tmp/x.js:3");
  EXPECT_EQ(s[2].func, "Builtin: JSEntry");
  for (size_t i : {1, 2}) {
    EXPECT_EQ(s[i].category, "JIT");
    EXPECT_EQ(s[i].lib, "");
    EXPECT_EQ(s[i].address, -1);
  }
  // A module's address keeps its native name even where the map claims it.
  auto t = symtest::sample_stack(doc_, 0, 1);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].func, "LazyCompile:*fib /tmp/x.js:3");
  EXPECT_EQ(t[1].func, "symtest::leaf_function(int)");
  EXPECT_EQ(t[1].category, "Native");
}

TEST_F(JitSymbolicateTest, NoMapMeansNoJitCategory) {
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    d.thread_start(1, 0, "main", kThreadMain);
    d.sample(1, 1'000'000, {kJitBase + 0x10});
    d.end(2'000'000);
    d.close();
  }
  convert();
  EXPECT_EQ(category_count("JIT"), 0);
  auto s = symtest::sample_stack(doc_, 0, 0);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].func, "0x10000010");
}

}  // namespace
