// The threads a profile shows, their names, and which are visible and selected when it opens
// (issue 22, items 4, 5 and 9).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "test_support.h"

namespace {

using namespace inprof::internal;
using rapidjson::SizeType;

using symtest::kMs;

class ThreadTracksTest : public ::testing::Test {
 protected:
  void convert() {
    std::string out = dir_.path("t.json");
    std::string err;
    ASSERT_EQ(symtest::symbolicate_in_process(dir_.path("t.inprof"), out, &err), 0) << err;
    ASSERT_TRUE(symtest::load_json(out, &doc_));
    for (const auto& p : symtest::check_structure(doc_)) ADD_FAILURE() << p;
  }
  // Thread names by tid.
  std::map<uint64_t, std::string> names() {
    std::map<uint64_t, std::string> out;
    for (const auto& t : doc_["threads"].GetArray())
      out[t["tid"].GetUint64()] = t["name"].GetString();
    return out;
  }
  // The tids of a meta list of thread indices.
  std::vector<uint64_t> tids(const char* key) {
    std::vector<uint64_t> out;
    for (const auto& i : doc_["meta"][key].GetArray()) {
      out.push_back(doc_["threads"][i.GetUint()]["tid"].GetUint64());
    }
    return out;
  }

  symtest::TempDir dir_;
  rapidjson::Document doc_;
};

TEST_F(ThreadTracksTest, NamesVisibilityAndTheProfilersOwnThreads) {
  ProcessRecord p = symtest::test_process();
  p.executable = "/opt/app/bin/a_very_long_program_name";
  p.command_line = {"./a_very_long_program_name", "--serve"};
  {
    symtest::DumpFile d(dir_.path("t.inprof"));
    d.process(p);
    // The kernel's names: the process's, cut to 15 bytes.
    d.thread_start(100, 0, "a_very_long_pro", kThreadMain);
    d.thread_start(101, 0, "a_very_long_pro");
    // Given with set_thread_name: recorded whole.
    d.thread_start(102, 0, "a worker named at length");
    d.thread_start(103, 0, "");
    d.thread_start(104, 0, "inprof-stopper");
    d.thread_start(105, 0, "inprof-capture");
    d.thread_start(106, 0, "quiet");  // neither samples nor markers
    d.thread_start(108, 0, "inprof-sampled");
    d.sample(100, 1 * kMs, {0x1000}, 0, 100'000);
    d.sample(101, 1 * kMs, {0x1000}, 0, 500'000);
    d.sample(102, 1 * kMs, {0x1000}, 0, 900'000);
    d.sample(102, 2 * kMs, {0x1000}, 0, 900'000);
    d.sample(103, 1 * kMs, {0x1000}, 0, 200'000);
    d.sample(108, 1 * kMs, {0x1000}, 0, 100'000);
    d.sample(104, 1 * kMs, {0x1000}, 0, 0);  // the stopper, sampled while it waits
    MarkerRecord m;
    m.tid = 107;  // a thread seen only in a marker
    m.start_ns = m.end_ns = 1 * kMs;
    m.name = "ping";
    d.marker(m);
    d.end(3 * kMs);
    d.close();
  }
  convert();
  EXPECT_STREQ(doc_["meta"]["product"].GetString(), "a_very_long_program_name");
  const auto n = names();
  EXPECT_EQ(n.at(100), "a_very_long_program_name");
  EXPECT_EQ(n.at(101), "a_very_long_program_name 101");
  EXPECT_EQ(n.at(102), "a worker named at length");
  EXPECT_EQ(n.at(103), "a_very_long_program_name 103");
  EXPECT_EQ(n.at(106), "quiet");
  EXPECT_EQ(n.at(107), "a_very_long_program_name 107");
  // The profiler's own threads are left out; another inprof-* thread only if it has no samples.
  EXPECT_EQ(n.count(104), 0u);
  EXPECT_EQ(n.count(105), 0u);
  EXPECT_EQ(n.at(108), "inprof-sampled");

  EXPECT_EQ(tids("initialVisibleThreads"), (std::vector<uint64_t>{100, 101, 102, 103, 108, 107}));
  // The thread that used the most CPU.
  EXPECT_EQ(tids("initialSelectedThreads"), (std::vector<uint64_t>{102}));
}

// argv[0] may name a link (python3 -> python3.11): the kernel's name then comes from it.
TEST_F(ThreadTracksTest, TheKernelsNameMayComeFromArgvZero) {
  ProcessRecord p = symtest::test_process();
  p.executable = "/usr/bin/python3.11";
  p.command_line = {"python3", "-c", "pass"};
  {
    symtest::DumpFile d(dir_.path("t.inprof"));
    d.process(p);
    d.thread_start(1, 0, "python3", kThreadMain);
    d.thread_start(2, 0, "python3");
    d.sample(1, 1 * kMs, {0x1000});
    d.sample(2, 1 * kMs, {0x1000});
    d.end(2 * kMs);
    d.close();
  }
  convert();
  const auto n = names();
  EXPECT_EQ(n.at(1), "python3.11");
  EXPECT_EQ(n.at(2), "python3.11 2");
  // No CPU times: the most samples wins, the main thread (first) on a tie.
  EXPECT_EQ(tids("initialSelectedThreads"), (std::vector<uint64_t>{1}));
}

// issue 45, item 2: more than a few threads, and those that used almost no CPU (under 1 % of one
// CPU over the profile) start hidden, the main thread and the one that worked shown.
TEST_F(ThreadTracksTest, ThreadsThatBarelyRanStartHidden) {
  {
    symtest::DumpFile d(dir_.path("t.inprof"));
    d.process(symtest::test_process());
    d.thread_start(1, 0, "main", kThreadMain);
    d.sample(1, 1 * kMs, {0x1000}, 0, 1'000);
    d.thread_start(2, 0, "worker");
    d.sample(2, 1 * kMs, {0x1000}, 0, 5'000'000);
    for (uint64_t tid = 3; tid < 23; ++tid) {
      d.thread_start(tid, 0, "idle " + std::to_string(tid));
      d.sample(tid, 1 * kMs, {0x1000}, 0, 0);
      d.sample(tid, 90 * kMs, {0x1000}, 0, 5'000);
    }
    d.end(100 * kMs);
    d.close();
  }
  convert();
  EXPECT_EQ(tids("initialVisibleThreads"), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(tids("initialSelectedThreads"), (std::vector<uint64_t>{2}));
  EXPECT_EQ(doc_["threads"].Size(), 22u);  // all there, one click away
}

// Very many threads: the busiest are shown (and the main thread), not all.
TEST_F(ThreadTracksTest, ManyThreadsShowTheBusiest) {
  {
    symtest::DumpFile d(dir_.path("t.inprof"));
    d.process(symtest::test_process());
    d.thread_start(1, 0, "main", kThreadMain);
    d.sample(1, 1 * kMs, {0x1000}, 0, 1'000);
    for (uint64_t tid = 2; tid < 102; ++tid) {
      d.thread_start(tid, 0, "worker " + std::to_string(tid));
      d.sample(tid, 1 * kMs, {0x1000}, 0, tid * 1'000);
    }
    d.end(2 * kMs);
    d.close();
  }
  convert();
  const auto visible = tids("initialVisibleThreads");
  ASSERT_EQ(visible.size(), 32u);
  EXPECT_EQ(visible[0], 1u);
  for (size_t i = 1; i < visible.size(); ++i) EXPECT_GE(visible[i], 71u);
  EXPECT_EQ(tids("initialSelectedThreads"), (std::vector<uint64_t>{101}));
}

}  // namespace
