// Which samples are idle, and how the profile says so (issue 22, item 3). The viewer takes a
// sample's category from its stack, and a stack's from its top frame; it colours a call node
// whose samples disagree as "Other". So a frame's category never depends on the sample: an idle
// sample gets an Idle frame of its own on top of its stack. Idle means blocked: in a system call
// with little CPU time. A thread stopped in its own code without CPU time waited for a CPU.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "test_support.h"
#include "test_targets.h"

namespace {

using namespace inprof::internal;
using rapidjson::SizeType;
using rapidjson::Value;

using symtest::kMs;

class IdleSamplesTest : public ::testing::Test {
 protected:
  void convert() {
    std::string out = dir_.path("idle.json");
    std::string err;
    ASSERT_EQ(symtest::symbolicate_in_process(dir_.path("idle.inprof"), out, &err), 0) << err;
    ASSERT_TRUE(symtest::load_json(out, &doc_));
    for (const auto& p : symtest::check_structure(doc_)) ADD_FAILURE() << p;
  }
  size_t thread_index(uint64_t tid) {
    const Value& threads = doc_["threads"];
    for (SizeType i = 0; i < threads.Size(); ++i) {
      if (threads[i]["tid"].GetUint64() == tid) return i;
    }
    ADD_FAILURE() << "no thread " << tid;
    return 0;
  }
  std::vector<symtest::FrameView> stack(uint64_t tid, size_t sample) {
    return symtest::sample_stack(doc_, thread_index(tid), sample);
  }
  // The categories of the call nodes of a thread as the viewer derives them: a node's category
  // is its stacks' if they agree, else "Other".
  std::map<std::string, std::string> call_node_categories(uint64_t tid) {
    const Value& shared = doc_["shared"];
    const Value& stacks = shared["stackTable"];
    const Value& frames = shared["frameTable"];
    const Value& funcs = shared["funcTable"];
    const Value& strings = shared["stringArray"];
    const Value& categories = doc_["meta"]["categories"];
    std::map<std::string, std::string> nodes;
    const Value& samples = doc_["threads"][static_cast<SizeType>(thread_index(tid))]["samples"];
    for (const Value& s : samples["stack"].GetArray()) {
      if (s.IsNull()) continue;
      std::vector<SizeType> chain;
      for (auto i = s.GetUint();;) {
        chain.insert(chain.begin(), i);
        const auto offset = stacks["prefixOffset"][i].GetUint();
        if (offset == 0) break;
        i -= offset;
      }
      std::string path, category = "Other";
      for (SizeType i : chain) {
        const SizeType frame = stacks["frame"][i].GetUint();
        path += std::string("/") +
                strings[funcs["name"][frames["func"][frame].GetUint()].GetUint()].GetString();
        if (!frames["category"][frame].IsNull()) {
          category = categories[frames["category"][frame].GetUint()]["name"].GetString();
        }
        auto [it, inserted] = nodes.emplace(path, category);
        if (!inserted && it->second != category) it->second = "Other";
      }
    }
    return nodes;
  }

  symtest::TempDir dir_;
  rapidjson::Document doc_;
};

#if defined(__x86_64__) || defined(__aarch64__)
TEST_F(IdleSamplesTest, BlockedInASystemCallIsIdleWaitingForACpuIsNot) {
  const uint64_t blocked = symtest::after_syscall_address();
  const uint64_t preempted = symtest::after_plain_code_address();
  const uint64_t caller = symtest::caller_function();
  {
    symtest::DumpFile d(dir_.path("idle.inprof"));
    d.process(symtest::test_process());
    d.module(symtest::self_module());
    d.thread_start(1, 0, "waiter", kThreadMain);
    d.thread_start(2, 0, "worker");
    // Thread 1 sits in a system call: unknown CPU use (its first sample), none (a repeat), a
    // tenth of the interval (it woke up briefly), and then most of it (busy in the kernel).
    d.sample(1, 1 * kMs, {blocked, caller});
    d.repeat(1, 2 * kMs, 0);
    d.sample(1, 3 * kMs, {blocked, caller}, 0, 100'000);
    d.sample(1, 4 * kMs, {blocked, caller}, 0, 900'000);
    // Thread 2 is stopped in its own code, with as little CPU time.
    d.sample(2, 1 * kMs, {preempted, caller});
    d.repeat(2, 2 * kMs, 0);
    d.sample(2, 3 * kMs, {preempted, caller}, 0, 100'000);
    d.sample(2, 4 * kMs, {preempted, caller}, 0, 900'000);
    d.end(5 * kMs);
    d.close();
  }
  convert();
  const auto busy = stack(1, 3);
  ASSERT_FALSE(busy.empty());
  EXPECT_EQ(busy.back().category, "Native");
  for (size_t i = 0; i < 3; ++i) {
    const auto idle = stack(1, i);
    ASSERT_EQ(idle.size(), busy.size() + 1) << "sample " << i;
    EXPECT_EQ(idle.back().func, "[blocked]") << "sample " << i;
    EXPECT_EQ(idle.back().category, "Idle") << "sample " << i;
    for (size_t k = 0; k < busy.size(); ++k) {
      EXPECT_EQ(idle[k].func, busy[k].func);
      EXPECT_EQ(idle[k].category, busy[k].category);
    }
  }
  for (size_t i = 0; i < 4; ++i) {
    const auto s = stack(2, i);
    ASSERT_FALSE(s.empty());
    EXPECT_EQ(s.back().category, "Native") << "sample " << i;
    EXPECT_EQ(symtest::sample_stack_index(doc_, thread_index(2), i),
              symtest::sample_stack_index(doc_, thread_index(2), 0));
  }
  // No call node mixes categories, so none is "Other".
  for (uint64_t tid : {1, 2}) {
    for (const auto& [path, category] : call_node_categories(tid)) {
      EXPECT_NE(category, "Other") << "thread " << tid << ": " << path;
    }
  }
}
#endif

#if defined(__x86_64__) || defined(__aarch64__)
// CPU a thread ran where no sample saw it (issue 40: bursts its CPU timer never caught) is shown
// above the stack it sleeps in, under a frame of its own, never as that stack's code's CPU;
// the same stack's samples and repeats without CPU are the thread asleep there.
TEST_F(IdleSamplesTest, CpuRunUnseenIsShownApartFromTheStackItSleepsIn) {
  const uint64_t blocked = symtest::after_syscall_address();
  const uint64_t caller = symtest::caller_function();
  {
    symtest::DumpFile d(dir_.path("idle.inprof"));
    d.process(symtest::test_process());
    d.module(symtest::self_module());
    d.thread_start(1, 0, "waker", kThreadMain);
    d.sample(1, 1 * kMs, {blocked, caller}, kSampleRanUnseen, 0);
    d.repeat(1, 2 * kMs, 0);
    d.sample(1, 20 * kMs, {blocked, caller}, kSampleRanUnseen, 16 * kMs);
    d.repeat(1, 30 * kMs, 6 * kMs);  // the tail, when its timer was given back
    d.end(31 * kMs);
    d.close();
  }
  convert();
  for (size_t i : {0, 1}) {
    const auto asleep = stack(1, i);
    ASSERT_FALSE(asleep.empty());
    EXPECT_EQ(asleep.back().func, "[blocked]") << "sample " << i;
    EXPECT_EQ(asleep.back().category, "Idle") << "sample " << i;
  }
  for (size_t i : {2, 3}) {
    const auto ran = stack(1, i);
    ASSERT_GE(ran.size(), 2u);
    EXPECT_EQ(ran.back().func, "[ran between samples]") << "sample " << i;
    EXPECT_EQ(ran.back().category, "Other") << "sample " << i;
    // Below it, the stack it sleeps in, without the idle frame.
    const auto asleep = stack(1, 0);
    ASSERT_EQ(ran.size(), asleep.size());
    for (size_t k = 0; k + 1 < ran.size(); ++k) EXPECT_EQ(ran[k].func, asleep[k].func);
  }
  // All 22 ms of CPU are in the profile.
  const Value& cpu =
      doc_["threads"][static_cast<SizeType>(thread_index(1))]["samples"]["threadCPUDelta"];
  uint64_t total = 0;
  for (const Value& v : cpu.GetArray()) total += v.IsNull() ? 0 : v.GetUint64();
  EXPECT_EQ(total, 22 * kMs);
}
#endif

// A frame's category is a property of the frame: every func has exactly one in the frame table.
TEST_F(IdleSamplesTest, EveryFunctionHasOneCategory) {
  const uint64_t caller = symtest::caller_function();
  const uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  {
    symtest::DumpFile d(dir_.path("idle.inprof"));
    d.process(symtest::test_process());
    d.module(symtest::self_module());
    d.thread_start(1, 0, "main", kThreadMain);
    for (uint64_t i = 0; i < 6; ++i) {
      d.sample(1, (2 * i + 1) * kMs, {leaf, caller}, 0, i % 2 ? 900'000 : 0);
      d.repeat(1, (2 * i + 2) * kMs, 0);
    }
    d.end(20 * kMs);
    d.close();
  }
  convert();
  const Value& frames = doc_["shared"]["frameTable"];
  std::map<unsigned, unsigned> category_of_func;
  for (SizeType i = 0; i < frames["length"].GetUint(); ++i) {
    ASSERT_FALSE(frames["category"][i].IsNull());
    auto [it, inserted] =
        category_of_func.emplace(frames["func"][i].GetUint(), frames["category"][i].GetUint());
    EXPECT_EQ(it->second, frames["category"][i].GetUint()) << "func " << it->first;
  }
  for (const auto& [path, category] : call_node_categories(1)) {
    EXPECT_NE(category, "Other") << path;
  }
}

}  // namespace
