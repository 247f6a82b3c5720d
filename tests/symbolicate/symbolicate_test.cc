// End-to-end tests in process: dumps that point at the test executable itself go through
// run_symbolicate, and the JSON that comes out is checked.
#include "symbolicate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "convert/profile_converter.h"
#include "symbolize/module_symbolizer.h"
#include "test_support.h"
#include "test_targets.h"
#include "text_util.h"

namespace {

using namespace inprof::internal;
using symtest::FrameView;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string exe_name() { return std::filesystem::path(symtest::self_path()).filename(); }

class SymbolicateTest : public ::testing::Test {
 protected:
  std::string dump_path() const { return dir_.path("test.inprof"); }
  std::string out_path() const { return dir_.path("test.json"); }

  // Symbolicates dump_path(), expects success and a structurally sound profile.
  void convert() {
    ASSERT_EQ(symtest::symbolicate_in_process(dump_path(), out_path(), &err_), 0) << err_;
    ASSERT_TRUE(symtest::load_json(out_path(), &doc_));
    auto problems = symtest::check_structure(doc_);
    for (const auto& p : problems) ADD_FAILURE() << p;
  }

  std::vector<FrameView> stack(size_t sample, size_t thread = 0) {
    return symtest::sample_stack(doc_, thread, sample);
  }

  symtest::TempDir dir_;
  rapidjson::Document doc_;
  std::string err_;
};

TEST_F(SymbolicateTest, ResolvesFunctionsFilesAndLines) {
  uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  uint64_t caller_ra = symtest::caller_function();
  ModuleRecord self = symtest::self_module();
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    d.module(self);
    d.thread_start(1, 0, "main", kThreadMain);
    d.sample(1, 1'000'000, {leaf, caller_ra});
    d.end(2'000'000);
    d.close();
  }
  convert();
  std::vector<FrameView> s = stack(0);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].func, "symtest::caller_function()");
  EXPECT_EQ(s[1].func, "symtest::leaf_function(int)");
  for (const FrameView& f : s) {
    EXPECT_TRUE(ends_with(f.file, "test_targets.cc")) << f.file;
    EXPECT_EQ(f.lib, exe_name());
    EXPECT_EQ(f.inline_depth, 0);
  }
  EXPECT_EQ(s[0].func_line, symtest::kCallerFunctionLine);
  EXPECT_EQ(s[1].func_line, symtest::kLeafFunctionLine);
  // The return address is looked up at the call: its line is the call's line.
  EXPECT_EQ(s[0].line, symtest::kCallerCallLine);
  // The entry may belong to the first statement when the function has no prologue.
  EXPECT_GE(s[1].line, symtest::kLeafFunctionLine);
  EXPECT_LE(s[1].line, symtest::kLeafFunctionLine + 2);
  // Frame addresses are relative to the library: the leaf's exact, a caller's in its call
  // (return address - 1), as the Firefox Profiler expects of stack-walked frames.
  EXPECT_EQ(s[1].address, static_cast<int64_t>(leaf - self.start));
  EXPECT_EQ(s[0].address, static_cast<int64_t>(caller_ra - 1 - self.start));

  const auto& lib = doc_["libs"][0];
  EXPECT_EQ(lib["codeId"].GetString(), inprof::symbolicate::hex_string(self.build_id));
  EXPECT_EQ(std::string(lib["breakpadId"].GetString()).size(), 33u);
  EXPECT_STREQ(lib["arch"].GetString(), "x86_64");
  EXPECT_TRUE(doc_["shared"]["nativeSymbols"]["length"].GetUint() >= 2);
}

TEST_F(SymbolicateTest, EmitsInlinedFramesOuterFirst) {
  uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  uint64_t ra = symtest::outer_with_inline();
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    d.module(symtest::self_module());
    d.sample(1, 1'000'000, {leaf, ra});
    d.close();
  }
  convert();
  std::vector<FrameView> s = stack(0);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].func, "symtest::outer_with_inline()");
  EXPECT_EQ(s[0].inline_depth, 0);
  EXPECT_EQ(s[0].line, symtest::kOuterCallsHelperLine);
  EXPECT_EQ(s[1].func, "symtest::inlined_helper()");
  EXPECT_EQ(s[1].inline_depth, 1);
  EXPECT_EQ(s[1].line, symtest::kInlinedCallLine);
  EXPECT_EQ(s[1].func_line, symtest::kInlinedHelperLine);
  EXPECT_EQ(s[0].address, s[1].address);
  EXPECT_EQ(s[2].func, "symtest::leaf_function(int)");
}

TEST_F(SymbolicateTest, UnknownModuleAndUnmappedAddressesKeepTheirFrames) {
  ModuleRecord missing;
  missing.id = 2;
  missing.start = 0x10000000;
  missing.end = 0x10010000;
  missing.load_bias = 0x10000000;
  missing.path = "/nonexistent/dir/libmissing.so";
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    d.module(missing);
    d.sample(1, 1'000'000, {0x10000010, 0x20000000, 0x10000abc});
    d.close();
  }
  convert();
  std::vector<FrameView> s = stack(0);
  ASSERT_EQ(s.size(), 3u);
  // A caller is named by the return address the dump holds, placed at its call.
  EXPECT_EQ(s[0].func, "libmissing.so+0xabc");
  EXPECT_EQ(s[0].lib, "libmissing.so");
  EXPECT_EQ(s[0].address, 0xabb);
  EXPECT_EQ(s[1].func, "0x20000000");
  EXPECT_EQ(s[1].lib, "");
  EXPECT_EQ(s[1].address, -1);
  EXPECT_EQ(s[2].func, "libmissing.so+0x10");
  EXPECT_NE(err_.find("/nonexistent/dir/libmissing.so"), std::string::npos) << err_;
}

TEST_F(SymbolicateTest, BuildIdMismatchLeavesTheModuleUnsymbolicated) {
  ModuleRecord self = symtest::self_module();
  ASSERT_FALSE(self.build_id.empty()) << "the test binary needs a GNU build-id";
  self.build_id[0] ^= 0xff;
  uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    d.module(self);
    d.sample(1, 1'000'000, {leaf});
    d.close();
  }
  convert();
  std::vector<FrameView> s = stack(0);
  ASSERT_EQ(s.size(), 1u);
  char expected[64];
  std::snprintf(expected, sizeof expected, "+0x%llx",
                static_cast<unsigned long long>(leaf - self.start));
  EXPECT_EQ(s[0].func, exe_name() + expected);
  EXPECT_NE(err_.find("build-id mismatch"), std::string::npos) << err_;
}

// Repeats share the sample's stack. Those without CPU time did not run, but the leaf is in the
// program's code, not in a system call: the thread waited for a CPU, which is not idle. A repeat
// that carries CPU time (an expiration of the thread's CPU timer merged at the kernel's tick) ran.
TEST_F(SymbolicateTest, RepeatSamplesShareTheStackAndCarryCpuDeltas) {
  uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  uint64_t caller_ra = symtest::caller_function();
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    d.module(symtest::self_module());
    d.sample(1, 1'000'000, {leaf, caller_ra}, 0, 900'000);
    d.repeat(1, 2'000'000, 0);
    d.repeat(1, 3'500'000);
    d.repeat(1, 4'000'000, 950'000);
    d.close();
  }
  convert();
  const auto& samples = doc_["threads"][0]["samples"];
  ASSERT_EQ(samples["length"].GetUint(), 4u);
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(symtest::sample_stack_index(doc_, 0, 0), symtest::sample_stack_index(doc_, 0, i));
  }
  EXPECT_EQ(stack(0).back().category, "Native");
  EXPECT_DOUBLE_EQ(samples["timeDeltas"][0].GetDouble(), 1.0);
  EXPECT_DOUBLE_EQ(samples["timeDeltas"][1].GetDouble(), 1.0);
  EXPECT_DOUBLE_EQ(samples["timeDeltas"][2].GetDouble(), 1.5);
  EXPECT_EQ(samples["threadCPUDelta"][0].GetUint(), 900'000u);
  EXPECT_EQ(samples["threadCPUDelta"][1].GetUint(), 0u);
  EXPECT_TRUE(samples["threadCPUDelta"][2].IsNull());
  EXPECT_EQ(samples["threadCPUDelta"][3].GetUint(), 950'000u);
  EXPECT_STREQ(doc_["meta"]["sampleUnits"]["threadCPUDelta"].GetString(), "ns");
}

TEST_F(SymbolicateTest, TruncatedStacksGetAPseudoRoot) {
  uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    d.module(symtest::self_module());
    d.sample(1, 1'000'000, {leaf}, kSampleTruncatedCopy);
    d.sample(1, 2'000'000, {leaf}, kSampleDepthLimit);
    d.sample(1, 3'000'000, {leaf});
    d.close();
  }
  convert();
  for (size_t i = 0; i < 2; ++i) {
    std::vector<FrameView> s = stack(i);
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0].func, "[truncated stack]");
  }
  ASSERT_EQ(stack(2).size(), 1u);
  EXPECT_EQ(stack(2)[0].func, "symtest::leaf_function(int)");
}

TEST_F(SymbolicateTest, ProcessAndThreadMetadata) {
  ProcessRecord p = symtest::test_process();
  {
    symtest::DumpFile d(dump_path());
    d.process(p);
    d.thread_start(10, 0, "main", kThreadMain);
    d.thread_start(11, 2'000'000, "worker");
    d.thread_name(11, 3'000'000, "renamed worker");
    d.sample(12, 4'000'000, {0x1234});  // a thread only seen in samples
    d.thread_end(11, 5'000'000);
    d.stats(StatsRecord{100, 7, 3, 1});
    d.end(6'000'000);
    d.close();
  }
  convert();
  const auto& meta = doc_["meta"];
  EXPECT_DOUBLE_EQ(meta["startTime"].GetDouble(), 1'700'000'000'000.0);
  EXPECT_DOUBLE_EQ(meta["interval"].GetDouble(), 1.0);
  EXPECT_EQ(meta["product"].GetString(), exe_name());
  EXPECT_EQ(meta["arguments"].GetString(), p.executable + " --flag value");
  const auto& threads = doc_["threads"];
  ASSERT_EQ(threads.Size(), 3u);
  EXPECT_STREQ(threads[0]["name"].GetString(), "main");
  EXPECT_TRUE(threads[0]["isMainThread"].GetBool());
  EXPECT_STREQ(threads[0]["pid"].GetString(), "4242");
  EXPECT_EQ(threads[0]["tid"].GetUint(), 10u);
  EXPECT_STREQ(threads[1]["name"].GetString(), "renamed worker");
  EXPECT_FALSE(threads[1]["isMainThread"].GetBool());
  EXPECT_DOUBLE_EQ(threads[1]["registerTime"].GetDouble(), 2.0);
  EXPECT_DOUBLE_EQ(threads[1]["unregisterTime"].GetDouble(), 5.0);
  EXPECT_TRUE(threads[0]["unregisterTime"].IsNull());
  // A thread without a name: the process's name and its id.
  EXPECT_EQ(threads[2]["name"].GetString(), exe_name() + " 12");
  // The stats are visible in the profile and on stderr.
  std::string extra;
  for (const auto& e : meta["extra"][0]["entries"].GetArray()) {
    extra += std::string(e["label"].GetString()) + "=";
    extra +=
        e["value"].IsString() ? e["value"].GetString() : std::to_string(e["value"].GetUint64());
    extra += ";";
  }
  EXPECT_NE(extra.find("Samples dropped (buffer full)=7;"), std::string::npos) << extra;
  EXPECT_NE(err_.find("7 dropped"), std::string::npos) << err_;
  // No sample had a CPU delta: no column.
  EXPECT_FALSE(threads[0]["samples"].HasMember("threadCPUDelta"));
}

// issue 45, item 8: samples taken while the allocation interposer records an allocation keep
// the program's call into it (malloc) and show the rest as the profiler's work, one frame; the
// interposer forwarding to the real allocator stays the program's.
TEST_F(SymbolicateTest, TheProfilersOwnCodeIsOneFrameOfItsOwn) {
  auto module = [](uint64_t id, uint64_t start, const std::string& path) {
    ModuleRecord m;
    m.id = id;
    m.start = start;
    m.end = start + 0x10000;
    m.load_bias = start;
    m.path = path;
    return m;
  };
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    d.module(module(1, 0x10000000, "/nonexistent/app"));
    d.module(module(2, 0x20000000, "/nonexistent/libinprof_allocations.so"));
    d.module(module(3, 0x30000000, "/nonexistent/libc.so.6"));
    // Leaf first: libc's memset called by the interposer's helper, its helper, its malloc, app.
    d.sample(1, 1'000'000, {0x30000050, 0x20000300, 0x20000200, 0x20000100, 0x10000100});
    // The interposer's malloc forwarding to libc's.
    d.sample(1, 2'000'000, {0x30000040, 0x20000100, 0x10000100});
    d.close();
  }
  convert();
  std::vector<FrameView> recording = stack(0);
  ASSERT_EQ(recording.size(), 3u);
  EXPECT_EQ(recording[0].func, "app+0x100");
  EXPECT_EQ(recording[1].func, "libinprof_allocations.so+0x100");
  EXPECT_EQ(recording[2].func, "[inprof's own work]");
  std::vector<FrameView> forwarding = stack(1);
  ASSERT_EQ(forwarding.size(), 3u);
  EXPECT_EQ(forwarding[2].func, "libc.so.6+0x40");
}

TEST_F(SymbolicateTest, ModulesAreChosenByLoadTime) {
  // Two libraries at the same addresses, one after the other (dlclose, then dlopen).
  ModuleRecord a, b;
  a.id = 1;
  a.time_ns = 0;
  a.start = b.start = 0x40000000;
  a.end = b.end = 0x40001000;
  a.path = "/nonexistent/liba.so";
  b.id = 2;
  b.time_ns = 5'000'000;
  b.path = "/nonexistent/libb.so";
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    d.module(a);
    d.sample(1, 1'000'000, {0x40000010});
    d.module_unload(1, 4'000'000);
    d.module(b);
    d.sample(1, 6'000'000, {0x40000010});
    d.close();
  }
  convert();
  EXPECT_EQ(stack(0)[0].func, "liba.so+0x10");
  EXPECT_EQ(stack(1)[0].func, "libb.so+0x10");
}

// A library loaded and unloaded again and again: every module epoch resolves the same raw stack
// to its own library, also past the first few epochs (kept sparsely) and for idle repeats.
TEST_F(SymbolicateTest, ManyModuleEpochsEachResolveTheirOwnLibrary) {
  constexpr int kLibraries = 12;
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    for (int i = 0; i < kLibraries; ++i) {
      ModuleRecord m;
      m.id = uint64_t(i + 1);
      m.time_ns = uint64_t(i) * 10'000'000;
      m.start = 0x40000000;
      m.end = 0x40001000;
      m.path = "/nonexistent/lib" + std::to_string(i) + ".so";
      d.module(m);
      d.sample(1, m.time_ns + 1'000'000, {0x40000010, 0x40000020});
      d.repeat(1, m.time_ns + 2'000'000);
      d.module_unload(m.id, m.time_ns + 5'000'000);
    }
    d.close();
  }
  convert();
  for (int i = 0; i < kLibraries; ++i) {
    std::string lib = "lib" + std::to_string(i) + ".so";
    for (size_t k : {size_t(2 * i), size_t(2 * i + 1)}) {
      // The repeat did not run, and its code cannot be read: idle, as an Idle frame on top.
      auto frames = stack(k);
      ASSERT_EQ(frames.size(), k % 2 ? 3u : 2u) << "sample " << k;
      EXPECT_EQ(frames[0].func, lib + "+0x20") << "sample " << k;
      EXPECT_EQ(frames[1].func, lib + "+0x10") << "sample " << k;
      EXPECT_EQ(frames[1].category, "Native") << "sample " << k;
      if (k % 2) {
        EXPECT_EQ(frames[2].category, "Idle") << "sample " << k;
      }
    }
  }
}

TEST_F(SymbolicateTest, DumpCutShortStillProducesTheCompleteRecords) {
  uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    d.module(symtest::self_module());
    d.sample(1, 1'000'000, {leaf});
    d.sample(1, 2'000'000, {leaf});
    d.flush();
    for (int i = 0; i < 200; ++i) d.sample(1, 3'000'000 + i * 1000, {leaf + (i % 7)});
    d.end(9'000'000);
    d.close();
  }
  auto size = std::filesystem::file_size(dump_path());
  // Cut into the middle of the second chunk, as a killed process would leave it.
  ASSERT_EQ(truncate(dump_path().c_str(), static_cast<off_t>(size - 20)), 0);
  convert();
  EXPECT_EQ(doc_["threads"][0]["samples"]["length"].GetUint(), 2u);
  EXPECT_EQ(stack(0)[0].func, "symtest::leaf_function(int)");
  EXPECT_NE(err_.find("warning"), std::string::npos) << err_;
}

TEST_F(SymbolicateTest, DamagedChunkIsSkipped) {
  uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    d.module(symtest::self_module());
    d.sample(1, 1'000'000, {leaf});
    d.flush();
    d.sample(1, 2'000'000, {leaf});
    d.flush();
    d.sample(1, 3'000'000, {leaf});
    d.end(4'000'000);
    d.close();
  }
  // Damage the middle of the file (inside the second chunk, probably; either way no crash).
  {
    std::FILE* f = std::fopen(dump_path().c_str(), "r+b");
    ASSERT_TRUE(f);
    long size = static_cast<long>(std::filesystem::file_size(dump_path()));
    std::fseek(f, size / 2, SEEK_SET);
    const char junk[8] = {'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x'};
    std::fwrite(junk, 1, sizeof junk, f);
    std::fclose(f);
  }
  // Records were lost: the profile holds the rest, and the exit status says so (3), in one line.
  ASSERT_EQ(symtest::symbolicate_in_process(dump_path(), out_path(), &err_), 3) << err_;
  ASSERT_TRUE(symtest::load_json(out_path(), &doc_));
  EXPECT_TRUE(symtest::check_structure(doc_).empty());
  EXPECT_GE(doc_["threads"][0]["samples"]["length"].GetUint(), 1u);
  EXPECT_NE(err_.find("warning"), std::string::npos) << err_;
  EXPECT_NE(err_.find("symbolicate: error: records were lost"), std::string::npos) << err_;
}

TEST_F(SymbolicateTest, CorruptDumpIsAnError) {
  {
    std::FILE* f = std::fopen(dump_path().c_str(), "wb");
    std::fputs("this is not a dump at all", f);
    std::fclose(f);
  }
  EXPECT_EQ(symtest::symbolicate_in_process(dump_path(), out_path(), &err_), 1);
  EXPECT_EQ(err_.rfind("symbolicate: error: ", 0), 0u) << err_;
}

TEST(Demangle, CxxAndLegacyRustNames) {
  using inprof::symbolicate::demangle;
  EXPECT_EQ(demangle("_ZN3foo3barEv"), "foo::bar()");
  EXPECT_EQ(demangle("plain_c_name"), "plain_c_name");
  EXPECT_EQ(demangle("_Zgarbage"), "_Zgarbage");
  // Rust's legacy mangling: the hash goes, the $..$ escapes and ".." are decoded.
  EXPECT_EQ(demangle("_ZN4core3fmt5write17h0123456789abcdefE"), "core::fmt::write");
  EXPECT_EQ(demangle("_ZN70_$LT$alloc..vec..Vec$LT$T$C$A$GT$$u20$as$u20$core..ops..drop..Drop$GT$"
                     "4drop17h0123456789abcdefE"),
            "<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop");
}

}  // namespace
