// The release target (release_target.cc) built by clang, symbolicated end to end. clang writes
// no .debug_aranges, and libdwfl (libdw 0.188) then finds no unit for any address: its frames
// had names from the ELF symbols but no file and no line at all. Each variant, DWARF 5, DWARF 4
// and -gline-tables-only, must get the files, lines and inlined frames llvm-symbolizer gives:
// without the cache, then with it (a first dump fills it, a second has an address only the
// module index can answer). Skipped when the build found no clang++ (tests/symbolicate's
// CMakeLists.txt builds the targets).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "release_target_facts.h"
#include "symbolize/elf/elf_file.h"
#include "test_support.h"

namespace {

using namespace inprof::internal;

constexpr uint64_t kBias = 0x10000000;

class SymbolicateClang : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const std::string dir = CLANG_TARGETS_DIR;
    if (dir.empty()) GTEST_SKIP() << "clang++ was not found when the build was configured";
    target_ = dir + "/release_" + GetParam();
    facts_ = symtest::run_target(target_);
    ASSERT_NE(facts_.leaf, 0u) << target_;
    ASSERT_NE(facts_.inline_return, 0u) << target_;
  }

  // A dump whose one sample is `frames` (ELF virtual addresses of the target, leaf first).
  void write_dump(const std::vector<uint64_t>& frames) {
    ModuleRecord m;
    m.id = 1;
    m.start = kBias;
    m.end = kBias + 0x1000000;
    m.load_bias = kBias;
    m.flags = kModuleMainExecutable;
    m.path = target_;
    std::string why;
    auto elf = inprof::symbolicate::inspect_elf_file(target_, &why);
    ASSERT_TRUE(elf) << why;
    for (size_t i = 0; i + 1 < elf->build_id.size(); i += 2) {
      m.build_id.push_back(
          static_cast<uint8_t>(std::stoul(elf->build_id.substr(i, 2), nullptr, 16)));
    }
    std::vector<uint64_t> addresses;
    for (uint64_t f : frames) addresses.push_back(kBias + f);
    symtest::DumpFile d(dir_.path("d.inprof"));
    d.process(symtest::test_process());
    d.module(m);
    d.thread_start(1, 0, "main", kThreadMain);
    d.sample(1, 1'000'000, addresses);
    d.end(2'000'000);
    d.close();
  }

  // Runs the symbolicate binary; returns the sample's stack (root first).
  std::vector<symtest::FrameView> symbolicate(const std::vector<std::string>& options) {
    std::vector<std::string> args = {dir_.path("d.inprof"), "-o", dir_.path("o.json")};
    args.insert(args.end(), options.begin(), options.end());
    std::string why;
    std::vector<symtest::FrameView> stack =
        symtest::symbolicate_first_stack(args, dir_.path("o.json"), &err_, &why);
    EXPECT_TRUE(why.empty()) << why;
    return stack;
  }

  // The leaf under the inlined call: the outer function, the helper inlined into it, the leaf,
  // each with its file and line, as llvm-symbolizer places them.
  void expect_lines(const std::vector<symtest::FrameView>& s) {
    ASSERT_EQ(s.size(), 3u) << err_;
    // -gline-tables-only describes a function by its DW_AT_name alone: no parameters.
    const bool full = std::string(GetParam()) != "line_tables";
    EXPECT_EQ(s[0].func, "release_outer()");
    EXPECT_EQ(s[0].line, facts_.outer_line);
    EXPECT_EQ(s[1].func, full ? "release_inlined_helper()" : "release_inlined_helper");
    EXPECT_EQ(s[1].inline_depth, 1);
    EXPECT_EQ(s[1].line, facts_.helper_call_line);
    EXPECT_EQ(s[2].func, "release_leaf(int)");
    // The leaf's first row is its body's first line, after the declaration's.
    EXPECT_GE(s[2].line, facts_.leaf_line);
    EXPECT_LE(s[2].line, facts_.leaf_line + 2);
    // Only full DWARF has the functions' declaration lines (line tables only: no DW_AT_decl_line).
    if (full) {
      EXPECT_EQ(s[2].func_line, facts_.leaf_line);
    }
    for (const symtest::FrameView& f : s) {
      EXPECT_NE(f.file.find("release_target.cc"), std::string::npos) << f.func << ": " << f.file;
    }
  }

  symtest::TempDir dir_;
  std::string target_;
  symtest::TargetFacts facts_;
  std::string err_;
};

TEST_P(SymbolicateClang, FilesAndLinesWithoutAranges) {
  write_dump({facts_.leaf, facts_.inline_return});
  expect_lines(symbolicate({"--no-cache"}));
}

TEST_P(SymbolicateClang, FilesAndLinesThroughTheModuleIndex) {
  const std::string cache = dir_.path("cache");
  write_dump({facts_.leaf});  // indexes the program's one unit
  symbolicate({"--cache-dir", cache});
  write_dump({facts_.leaf, facts_.inline_return});
  expect_lines(symbolicate({"--cache-dir", cache}));
  // The return address was new: the index answered it, the module was not opened.
  EXPECT_NE(err_.find("(1 found by the module index), 0 modules opened"), std::string::npos)
      << err_;
}

INSTANTIATE_TEST_SUITE_P(Variants, SymbolicateClang,
                         ::testing::Values("dwarf5", "dwarf4", "line_tables"));

}  // namespace
