// Profiles that tell the truth (issue 21). A sample that is not complete says why, as the root of
// its stack and in the counts of Profile Info and --summary: truncated, no stack (registers only),
// unwind stopped (item 1). Each sample weighs the time it stands for (sample_weight.h): a sample
// standing for four intervals of CPU counts four times (item 2), a brief wake-up counts its
// microseconds, not a whole interval (item 3), and an idle sample keeps the time the thread slept.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "convert/sample_weight.h"
#include "test_support.h"
#include "test_targets.h"

namespace {

using namespace inprof::internal;
using rapidjson::SizeType;

using symtest::kMs;

using symtest::read_file;

class SampleTruthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
    const uint64_t caller_ra = symtest::caller_function();
    symtest::DumpFile d(dump());
    d.process(symtest::test_process());  // 1 ms interval
    d.module(symtest::self_module());
    d.thread_start(1, 0, "main", kThreadMain);
    d.sample(1, 1 * kMs, {leaf, caller_ra}, 0, kMs);                        // complete
    d.sample(1, 2 * kMs, {leaf, caller_ra}, kSampleTruncatedCopy, kMs);     // cut at the copy's end
    d.sample(1, 3 * kMs, {leaf}, kSampleNoStack | kSampleIncomplete, kMs);  // registers only
    d.sample(1, 4 * kMs, {leaf, caller_ra}, kSampleIncomplete, kMs);        // the walk stopped
    // A deep stack whose sample stands for four intervals of the thread's CPU.
    d.sample(1, 8 * kMs, {leaf, caller_ra}, 0, 4 * kMs);
    // A brief wake-up: 5 µs of CPU in 10 ms, stopped in its own code (not blocked).
    d.sample(1, 18 * kMs, {caller_ra}, 0, 5000);
    // Blocked in a system call for 10 ms: idle.
    d.sample(1, 28 * kMs, {symtest::after_syscall_address()}, 0, 2000);
    // A thread whose only sample has no CPU time: it weighs one interval, and is counted.
    d.thread_start(2, 0, "other");
    d.sample(2, 5 * kMs, {leaf, caller_ra});
    // A gap in the sampling: 100 ms of CPU since the thread's previous sample. Its sample weighs
    // 16 intervals; the rest is not laid on this one stack, nor dropped: it is under [ran
    // between samples], in samples of 16 intervals at most.
    d.thread_start(3, 0, "gap");
    d.sample(3, 1 * kMs, {leaf, caller_ra}, 0, kMs);
    d.sample(3, 101 * kMs, {caller_ra}, 0, 100 * kMs);
    d.end(30 * kMs);
    d.close();
  }
  std::string dump() const { return dir_.path("truth.inprof"); }
  void convert() {
    std::string err;
    ASSERT_EQ(symtest::symbolicate_in_process(dump(), dir_.path("truth.json"), &err), 0) << err;
    ASSERT_TRUE(symtest::load_json(dir_.path("truth.json"), &doc_));
    for (const auto& p : symtest::check_structure(doc_)) ADD_FAILURE() << p;
  }
  std::string root(size_t sample) {
    auto frames = symtest::sample_stack(doc_, 0, sample);
    return frames.empty() ? "" : frames.front().func;  // root first
  }

  symtest::TempDir dir_;
  rapidjson::Document doc_;
};

TEST_F(SampleTruthTest, AnIncompleteSampleSaysWhyAsItsRoot) {
  convert();
  ASSERT_EQ(doc_["threads"][0]["name"].GetString(), std::string("main"));
  EXPECT_NE(root(0).find("["), 0u) << root(0);
  EXPECT_EQ(root(1), "[truncated stack]");
  EXPECT_EQ(root(2), "[no stack]");
  EXPECT_EQ(root(3), "[unwind stopped]");
  // The frames it has are still there, named: the leaf of a sample without a stack is its PC.
  auto no_stack = symtest::sample_stack(doc_, 0, 2);
  ASSERT_EQ(no_stack.size(), 2u);
  EXPECT_EQ(no_stack[1].func, "symtest::leaf_function(int)");
  EXPECT_NE(root(4).find("["), 0u) << root(4);
}

TEST_F(SampleTruthTest, ProfileInfoCountsTheMarkedSamples) {
  convert();
  std::map<std::string, uint64_t> counts;
  for (const auto& e : doc_["meta"]["extra"][0]["entries"].GetArray()) {
    if (e["value"].IsUint64()) counts[e["label"].GetString()] = e["value"].GetUint64();
  }
  EXPECT_EQ(counts["Samples marked truncated"], 1u);
  EXPECT_EQ(counts["Samples without a stack (registers only)"], 1u);
  EXPECT_EQ(counts["Samples whose unwind stopped early"], 1u);
  EXPECT_EQ(counts["On-CPU samples weighted one interval (CPU time unknown)"], 1u);
  EXPECT_EQ(counts["On-CPU samples after a gap of more than 16 intervals"], 1u);
  EXPECT_EQ(counts["On-CPU time in those gaps, under [ran between samples] (µs)"], 84000u);
  EXPECT_EQ(counts["On-CPU time in those gaps not represented (µs)"], 0u);
  EXPECT_EQ(counts["Samples added in long sleeps and for CPU run unseen"], 6u);
}

TEST_F(SampleTruthTest, EachSampleWeighsTheTimeItStandsFor) {
  convert();
  const auto& samples = doc_["threads"][0]["samples"];
  ASSERT_EQ(samples["weightType"].GetString(), std::string("tracing-ms"));
  ASSERT_TRUE(samples["weight"].IsArray());
  // Whole milliseconds (the viewer prints some sums as they are): the brief wake-up's 5 µs are
  // carried to the thread's next on-CPU sample, there is none, so it weighs 0 and the thread's
  // on-CPU total, 8 ms, stays exact.
  const uint64_t expected[] = {1, 1, 1, 1, 4, 0, 10};
  ASSERT_EQ(samples["weight"].Size(), std::size(expected));
  for (SizeType i = 0; i < std::size(expected); ++i) {
    ASSERT_TRUE(samples["weight"][i].IsUint64()) << "sample " << i;
    EXPECT_EQ(samples["weight"][i].GetUint64(), expected[i]) << "sample " << i;
  }
  // No CPU time known: one interval.
  const auto& other = doc_["threads"][1]["samples"];
  ASSERT_EQ(other["weight"].Size(), 1u);
  EXPECT_EQ(other["weight"][0].GetUint64(), 1u);
  // A gap: at most 16 intervals on one stack, the other 84 ms under [ran between samples] alone,
  // 16 at most a sample, at the same time: every millisecond of CPU is in the profile.
  const auto& gap = doc_["threads"][2]["samples"];
  const uint64_t gap_expected[] = {1, 16, 16, 16, 16, 16, 4, 16};
  ASSERT_EQ(gap["weight"].Size(), std::size(gap_expected));
  for (SizeType i = 0; i < std::size(gap_expected); ++i) {
    EXPECT_EQ(gap["weight"][i].GetUint64(), gap_expected[i]) << "sample " << i;
    const auto frames = symtest::sample_stack(doc_, 2, i);
    ASSERT_FALSE(frames.empty()) << "sample " << i;
    if (i >= 1 && i <= 6) {
      ASSERT_EQ(frames.size(), 1u) << "sample " << i;
      EXPECT_EQ(frames[0].func, "[ran between samples]") << "sample " << i;
    } else {
      EXPECT_NE(frames.back().func, "[ran between samples]") << "sample " << i;
    }
  }
}

// A thread first copied late (thousands started at once, a sampler late on a loaded machine)
// slept there from its start: its first idle sample weighs the time since its start record, not
// one interval; one copied at its start weighs one interval, and a pause is not counted.
TEST(FirstIdleSampleTest, WeighsTheTimeSinceTheThreadStarted) {
  symtest::TempDir dir;
  const std::string dump = dir.path("late.inprof");
  {
    symtest::DumpFile d(dump);
    d.process(symtest::test_process());  // 1 ms interval
    d.module(symtest::self_module());
    d.thread_start(1, 0, "main", kThreadMain);
    d.sample(1, 1 * kMs, {symtest::after_syscall_address()}, 0, 0);
    d.thread_start(2, 2 * kMs, "late");
    d.sample(2, 30 * kMs, {symtest::after_syscall_address()}, 0, 0);
    d.sample(2, 40 * kMs, {symtest::after_syscall_address()}, 0, 0);
    d.thread_start(3, 2 * kMs, "prompt");
    d.sample(3, 2 * kMs + 200000, {symtest::after_syscall_address()}, 0, 0);
    d.end(50 * kMs);
    d.close();
  }
  std::string err;
  ASSERT_EQ(symtest::symbolicate_in_process(dump, dir.path("late.json"), &err), 0) << err;
  rapidjson::Document doc;
  ASSERT_TRUE(symtest::load_json(dir.path("late.json"), &doc));
  std::map<std::string, std::vector<uint64_t>> weights;
  for (const auto& t : doc["threads"].GetArray()) {
    auto& w = weights[t["name"].GetString()];
    for (const auto& x : t["samples"]["weight"].GetArray()) w.push_back(x.GetUint64());
  }
  EXPECT_EQ(weights["late"], (std::vector<uint64_t>{28, 10}));
  EXPECT_EQ(weights["prompt"], (std::vector<uint64_t>{1}));
}

TEST(WholeUnitWeightsTest, FractionsAreCarriedSoAThreadsTotalsStayExact) {
  // 1 ms: whole milliseconds. Ten wake-ups of 0.3 ms weigh 3 ms together; idle time is carried
  // apart from CPU time.
  inprof::symbolicate::WholeUnitWeights ms(kMs);
  EXPECT_STREQ(ms.weight_type(), "tracing-ms");
  uint64_t cpu = 0, idle = 0;
  for (int i = 0; i < 10; ++i) {
    cpu += ms.units(300000, false);
    idle += ms.units(kMs + 400000, true);
  }
  EXPECT_EQ(cpu, 3u);
  EXPECT_EQ(idle, 14u);
  // Under 1 ms: whole intervals, so that samples of 100 µs do not weigh 0 ms nine times in ten.
  inprof::symbolicate::WholeUnitWeights fine(100000);
  EXPECT_STREQ(fine.weight_type(), "samples");
  uint64_t intervals = 0;
  for (int i = 0; i < 10; ++i) {
    const uint64_t w = fine.units(98000 + 400 * i, false);
    EXPECT_EQ(w, 1u) << i;
    intervals += w;
  }
  EXPECT_EQ(intervals, 10u);
}

TEST_F(SampleTruthTest, TheSummaryWeighsCpuTimeAndCountsMarksAndUnknowns) {
  std::string err, out = dir_.path("s.txt");
  ASSERT_EQ(symtest::run_symbolicate_binary({dump(), "--summary", "-o", out}, &err), 0) << err;
  const std::string text = read_file(out);
  EXPECT_NE(text.find("samples marked: 1 truncated, 1 without a stack, 1 unwind stopped; 0 on "
                      "CPU weighted one interval"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("samples marked: 0 truncated, 0 without a stack, 0 unwind stopped; 1 on "
                      "CPU weighted one interval"),
            std::string::npos)
      << text;
  // leaf_function: 1 + 1 + 1 + 1 + 4 ms of CPU; caller_function 5 µs of its own (counted as
  // samples, they were 5 of 6 and 1 of 6).
  EXPECT_NE(text.find("8.0   99.9%        8.0   99.9%  symtest::leaf_function(int)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("0.0    0.1%        7.0   87.5%  symtest::caller_function()"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Samples marked truncated: 1"), std::string::npos) << text;
  EXPECT_NE(text.find("84.0 ms of CPU after gaps of more than 16 intervals under [ran between "
                      "samples] (6 samples), 0.0 ms not represented"),
            std::string::npos)
      << text;
}

}  // namespace
