// The platform's default unwinder, end to end inside one process: a thread spinning in a known
// chain of calls is sampled by a real session, and its samples in the dump hold that chain,
// innermost first. Portable: DWARF CFI on Linux, RtlVirtualUnwind on Windows.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "dump/dump_reader.h"
#include "inprof/profiler.h"
#include "session/process_info.h"
#include "test_util.h"

namespace inprof {
namespace {

using namespace internal;

std::atomic<bool> g_spin_chain{true};

// noipa: no clones, no inlining, so each function is one small body at its own address (clang,
// which has no noipa, neither clones nor inlines a noinline function).
#if defined(__clang__)
#define INPROF_NOIPA noinline
#else
#define INPROF_NOIPA noipa
#endif
__attribute__((INPROF_NOIPA)) void chain_leaf() {
  while (g_spin_chain.load(std::memory_order_relaxed)) {
  }
}
__attribute__((INPROF_NOIPA)) void chain_middle() {
  chain_leaf();
  asm volatile("" ::: "memory");  // a call, not a tail jump
}
__attribute__((INPROF_NOIPA)) void chain_outer() {
  chain_middle();
  asm volatile("" ::: "memory");
}

// The bodies above are a few dozen bytes; 256 bounds each without reaching far past it.
bool in_function(uint64_t address, void (*function)()) {
  const auto begin = reinterpret_cast<uint64_t>(function);
  return address >= begin && address < begin + 256;
}

struct Samples : DumpVisitor {
  std::vector<SampleRecord> samples;
  void on_sample(const SampleRecord& r) override { samples.push_back(r); }
};

TEST(CallChainTest, SamplesHoldTheKnownChainInnermostFirst) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("inprof-chain-test-" + std::to_string(process_id()) + ".inprof"))
                               .string();
  Options options;
  options.output_path = path;
  ASSERT_TRUE(Profiler::start(options));
  g_spin_chain = true;
  std::atomic<uint64_t> tid{0};
  std::thread worker([&] {
    tid = current_thread_id();
    chain_outer();
  });
  // Enough of the worker's own CPU time for dozens of samples even where each sample is slow
  // (Wine on a loaded machine: several ms).
  testing::wait_for_cpu(worker.native_handle(), std::chrono::milliseconds(500));
  g_spin_chain = false;
  worker.join();
  ASSERT_TRUE(Profiler::stop());
  Samples c;
  ASSERT_TRUE(read_dump_file(path, c).ok);
  std::filesystem::remove(path);

  size_t total = 0, with_chain = 0;
  for (const auto& s : c.samples) {
    if (s.tid != tid || s.frames.size() < 3) continue;
    if (!in_function(s.frames[0], chain_leaf)) continue;  // starting or leaving the thread
    ++total;
    if (in_function(s.frames[1], chain_middle) && in_function(s.frames[2], chain_outer)) {
      ++with_chain;
    }
  }
  ASSERT_GT(total, 20u);
  EXPECT_GT(with_chain * 10, total * 9) << with_chain << " of " << total;
}

}  // namespace
}  // namespace inprof
