// The other outputs (gzip, folded stacks, text summary) and determinism: the same dump gives
// byte-identical JSON whatever the number of symbolizing threads.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <sstream>

#include "test_support.h"
#include "test_targets.h"

namespace {

using namespace inprof::internal;

using symtest::read_file;

class OutputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    leaf_ = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
    caller_ra_ = symtest::caller_function();
    symtest::DumpFile d(dump());
    d.process(symtest::test_process());
    d.module(symtest::self_module());
    d.thread_start(1, 0, "main", kThreadMain);
    d.sample(1, 1'000'000, {leaf_, caller_ra_});
    d.sample(1, 2'000'000, {leaf_, caller_ra_});
    d.sample(1, 3'000'000, {leaf_});
    // Blocked in a system call: idle, left out of folded stacks and rankings.
    d.sample(1, 4'000'000, {symtest::after_syscall_address()});
    d.end(5'000'000);
    d.close();
  }
  std::string dump() const { return dir_.path("d.inprof"); }

  symtest::TempDir dir_;
  uint64_t leaf_ = 0, caller_ra_ = 0;
  std::string err_;
};

TEST_F(OutputsTest, GzippedJsonIsTheSameProfile) {
  std::string plain = dir_.path("p.json"), gz = dir_.path("p.json.gz");
  ASSERT_EQ(symtest::run_symbolicate_binary({dump(), "-o", plain}, &err_), 0) << err_;
  ASSERT_EQ(symtest::run_symbolicate_binary({dump(), "-o", gz}, &err_), 0) << err_;
  std::string bytes = read_file(gz);
  ASSERT_GT(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
  gzFile f = gzopen(gz.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::string unpacked;
  char buffer[65536];
  int n;
  while ((n = gzread(f, buffer, sizeof buffer)) > 0) unpacked.append(buffer, size_t(n));
  gzclose(f);
  EXPECT_EQ(unpacked, read_file(plain));
}

TEST_F(OutputsTest, FoldedStacksCountEachDistinctStack) {
  std::string out = dir_.path("f.txt");
  ASSERT_EQ(symtest::run_symbolicate_binary({dump(), "--format", "folded", "-o", out}, &err_), 0)
      << err_;
  std::string text = read_file(out);
  EXPECT_NE(text.find("main;symtest::caller_function();symtest::leaf_function(int) 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("main;symtest::leaf_function(int) 1\n"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
}

TEST_F(OutputsTest, SummaryRanksFunctionsBySelfAndTotalTime) {
  std::string out = dir_.path("s.txt");
  ASSERT_EQ(symtest::run_symbolicate_binary({dump(), "--summary", "-o", out}, &err_), 0) << err_;
  std::string text = read_file(out);
  EXPECT_NE(text.find("Thread \"main\""), std::string::npos) << text;
  EXPECT_NE(text.find("4 samples, 3 on CPU, 1 idle"), std::string::npos) << text;
  // Without CPU times each on-CPU sample weighs one interval (1 ms), and says so.
  EXPECT_NE(text.find("3 on CPU weighted one interval (CPU time unknown)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("3.0  100.0%        3.0  100.0%  symtest::leaf_function(int)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("0.0    0.0%        2.0   66.7%  symtest::caller_function()"),
            std::string::npos)
      << text;
}

TEST(Determinism, TheJsonDoesNotDependOnTheThreadCount) {
  symtest::TempDir dir;
  ModuleRecord self = symtest::self_module();
  uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  {
    symtest::DumpFile d(dir.path("d.inprof"));
    d.process(symtest::test_process());
    d.module(self);
    d.thread_start(1, 0, "main", kThreadMain);
    // Thousands of addresses all over the test executable's code: enough for several threads.
    uint64_t t = 0;
    for (uint64_t a = self.start + 0x1000, i = 0; a < self.end && i < 3000; a += 397, ++i) {
      d.sample(1, t += 1000, {a, leaf + 1, a + 13});
    }
    d.end(t + 1);
    d.close();
  }
  std::string err;
  for (const char* jobs : {"1", "3"}) {
    ASSERT_EQ(symtest::run_symbolicate_binary({dir.path("d.inprof"), "-j", jobs, "--split-at",
                                               "500", "-o", dir.path(std::string("j") + jobs)},
                                              &err),
              0)
        << err;
  }
  std::string one = read_file(dir.path("j1")), three = read_file(dir.path("j3"));
  EXPECT_GT(one.size(), 100000u);
  EXPECT_TRUE(one == three) << "the JSON differs between -j 1 and -j 3";
}

}  // namespace
