// The macOS backend's logic (platform/macos: thread ports, lister, suspend copier) over a fake
// Mach layer, on Linux: resumption on every path, nothing allocated while a thread is stopped,
// the sampler never stopped, every port and array given back, thread death, the idle skip, PAC
// stripping and the bounds of the copy.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "fake_mach_api.h"
#include "mach_stack_copier_macos.h"
#include "mach_thread_lister_macos.h"
#include "sampling/sampler.h"
#include "session/metadata_queue.h"
#include "session/ring_buffer.h"
#include "unwind/frame_pointer_unwinder.h"

namespace inprof::testing {
namespace {

using internal::CopyResult;
using internal::kKernInvalidArgument;
using internal::kKernTerminated;
using internal::kMachSendInvalidDest;
using internal::kRegFp;
using internal::kRegPc;
using internal::kRegSp;
using internal::MachStackCopier;
using internal::MachThreadLister;
using internal::StackSnapshot;

constexpr KernReturn kKernFailure = 5;

// A thread whose stack is `words` of test memory holding a chain of two frame records.
struct ScriptedStack {
  std::vector<uint64_t> words = std::vector<uint64_t>(64, 0);
  uint64_t base() const { return reinterpret_cast<uint64_t>(words.data() + words.size()); }
  uint64_t at(size_t i) const { return reinterpret_cast<uint64_t>(words.data() + i); }

  void script(FakeThread& t) {
    // Frame records at words[8] -> words[20] -> 0, return addresses 0x2000 and 0x3000.
    words[8] = at(20);
    words[9] = 0x2000;
    words[20] = 0;
    words[21] = 0x3000;
    t.regs[kRegPc] = 0x1000;
    t.regs[kRegSp] = at(4);
    t.regs[kRegFp] = at(8);
    t.bounds = {reinterpret_cast<uint64_t>(words.data()), base()};
  }
};

struct Snapshot {
  std::vector<uint8_t> buffer;
  StackSnapshot snapshot;
  explicit Snapshot(size_t capacity, size_t slack = 64) : buffer(capacity + slack, 0xAB) {
    snapshot.buffer = buffer.data();
    snapshot.capacity = capacity;
  }
};

TEST(MachBackendTest, ListsThreadsAndGivesBackEveryPortAndArray) {
  FakeMachApi api;
  api.add(FakeMachApi::kSelfTid);
  api.add(7).name = "worker";
  api.add(9);
  {
    MachThreadLister lister(api);
    std::vector<uint64_t> tids;
    ASSERT_TRUE(lister.list(tids));
    EXPECT_EQ(tids, (std::vector<uint64_t>{1, 7, 9}));
    ASSERT_TRUE(lister.list(tids));              // listed again: the new references are dropped
    EXPECT_EQ(api.outstanding_references(), 3);  // one kept per thread
    EXPECT_EQ(lister.name(7), "worker");
    EXPECT_EQ(lister.name(9), "");
    // A thread that exits between task_threads and THREAD_IDENTIFIER_INFO is left out, its
    // reference dropped; a thread no longer listed loses its kept one.
    api.thread(9).id_error = kKernTerminated;
    api.remove(7);
    ASSERT_TRUE(lister.list(tids));
    EXPECT_EQ(tids, (std::vector<uint64_t>{1}));
    EXPECT_EQ(api.outstanding_references(), 1);
    api.task_threads_error = kKernFailure;
    EXPECT_FALSE(lister.list(tids));
  }
  EXPECT_EQ(api.outstanding_references(), 0);
  EXPECT_EQ(api.outstanding_arrays(), 0);
  EXPECT_EQ(api.deallocate_errors(), 0);
}

TEST(MachBackendTest, CpuTimeIsUserPlusSystemAndDeathEndsTheThread) {
  FakeMachApi api;
  FakeThread& t = api.add(5);
  t.times = {300, 40, true};
  MachThreadLister lister(api);
  EXPECT_EQ(lister.cpu_time_ns(5), 340u);
  EXPECT_EQ(lister.asleep(5), true);
  EXPECT_EQ(lister.cpu_time_ns(6), std::nullopt);
  for (KernReturn death : {kKernTerminated, kMachSendInvalidDest, kKernInvalidArgument}) {
    api.thread(5).times_error = death;
    EXPECT_EQ(lister.cpu_time_ns(5), std::nullopt);
    EXPECT_EQ(api.outstanding_references(), 0) << death;  // forgotten at once
    api.thread(5).times_error = kKernSuccess;
    EXPECT_EQ(lister.cpu_time_ns(5), 340u);  // found again by a new listing
  }
  EXPECT_EQ(api.outstanding_arrays(), 0);
}

TEST(MachBackendTest, CopiesRegistersAndStackWithoutAllocatingThenResumes) {
  FakeMachApi api;
  ScriptedStack stack;
  stack.script(api.add(3));
  MachStackCopier copier(api);
  EXPECT_TRUE(api.state_read_before_first_suspend());
  Snapshot s(4096);
  ASSERT_EQ(copier.copy(3, s.snapshot), CopyResult::kOk);
  EXPECT_EQ(api.suspended_now(), 0);
  EXPECT_EQ(api.thread(3).suspensions, 1);
  EXPECT_EQ(api.allocations_while_suspended(), 0u);
  EXPECT_NE(s.snapshot.time_ns, 0u);
  EXPECT_EQ(s.snapshot.pc(), 0x1000u);
  EXPECT_EQ(s.snapshot.stack_start, stack.at(4));
  EXPECT_EQ(s.snapshot.stack_end(), stack.base());
  EXPECT_TRUE(s.snapshot.stack_found);
  EXPECT_FALSE(s.snapshot.stack_truncated);

  // Frame pointers first: the chain walks through the copy.
  internal::FramePointerUnwinder unwinder;
  uint64_t frames[8];
  const internal::UnwindOutput out = unwinder.unwind(s.snapshot, frames);
  ASSERT_EQ(out.count, 3u);
  EXPECT_EQ(frames[1], 0x2000u);
  EXPECT_EQ(frames[2], 0x3000u);
  EXPECT_TRUE(out.reached_end);
}

TEST(MachBackendTest, ResumesOnEveryErrorAndTellsDeathFromFailure) {
  for (KernReturn kr :
       {kKernFailure, kKernTerminated, kMachSendInvalidDest, kKernInvalidArgument}) {
    FakeMachApi api;
    ScriptedStack stack;
    stack.script(api.add(3));
    MachStackCopier copier(api);
    Snapshot s(4096);
    api.thread(3).get_state_error = kr;
    const CopyResult result = copier.copy(3, s.snapshot);
    EXPECT_EQ(result, kr == kKernFailure ? CopyResult::kFailed : CopyResult::kThreadGone) << kr;
    EXPECT_EQ(api.thread(3).suspensions, 1) << kr;
    EXPECT_EQ(api.suspended_now(), 0) << kr;
    EXPECT_EQ(copier.ports_kept(), kr == kKernFailure ? 1u : 0u) << kr;
    EXPECT_EQ(api.allocations_while_suspended(), 0u);
  }
}

TEST(MachBackendTest, ThreadDeathAtSuspensionForgetsThePort) {
  for (KernReturn kr :
       {kKernFailure, kKernTerminated, kMachSendInvalidDest, kKernInvalidArgument}) {
    FakeMachApi api;
    ScriptedStack stack;
    stack.script(api.add(3));
    {
      MachStackCopier copier(api);
      Snapshot s(4096);
      api.thread(3).suspend_error = kr;
      EXPECT_EQ(copier.copy(3, s.snapshot),
                kr == kKernFailure ? CopyResult::kFailed : CopyResult::kThreadGone);
      EXPECT_EQ(api.suspended_now(), 0);
      EXPECT_EQ(api.outstanding_references(), kr == kKernFailure ? 1 : 0) << kr;
      api.remove(3);  // gone: not found by a new listing either
      EXPECT_EQ(copier.copy(3, s.snapshot), CopyResult::kThreadGone);
    }
    EXPECT_EQ(api.outstanding_references(), 0);
    EXPECT_EQ(api.outstanding_arrays(), 0);
    EXPECT_EQ(api.deallocate_errors(), 0);
  }
}

TEST(MachBackendTest, NeverSuspendsItself) {
  FakeMachApi api;
  ScriptedStack stack;
  stack.script(api.add(FakeMachApi::kSelfTid));
  MachStackCopier copier(api);
  Snapshot s(4096);
  EXPECT_EQ(copier.copy(FakeMachApi::kSelfTid, s.snapshot), CopyResult::kFailed);
  EXPECT_EQ(api.self_suspensions(), 0);
  EXPECT_EQ(api.total_suspensions(), 0);
}

TEST(MachBackendTest, StripsPointerAuthenticationBits) {
  FakeMachApi api;
  api.mask = (uint64_t{1} << 47) - 1;  // machdep.virtual_address_size = 47
  ScriptedStack stack;
  FakeThread& t = api.add(3);
  stack.script(t);
  t.regs[kRegPc] = 0x002F'0000'0001'2344;
  if constexpr (internal::kHasLinkRegister) t.regs[internal::kRegLr] = 0x8000'7000'0000'1000;
  MachStackCopier copier(api);
  Snapshot s(4096);
  ASSERT_EQ(copier.copy(3, s.snapshot), CopyResult::kOk);
  EXPECT_EQ(s.snapshot.pc(), 0x0000'0000'0001'2344u);
  if constexpr (internal::kHasLinkRegister) {
    EXPECT_EQ(s.snapshot.regs[internal::kRegLr], 0x0000'7000'0000'1000u);
  }
  EXPECT_EQ(s.snapshot.sp(), stack.at(4));  // data registers are left alone
}

TEST(MachBackendTest, CopiesNoMoreThanTheBufferNorPastTheStack) {
  FakeMachApi api;
  ScriptedStack stack;
  FakeThread& t = api.add(3);
  stack.script(t);
  for (size_t i = 0; i < stack.words.size(); ++i) stack.words[i] = 0x1111'0000u + i;
  MachStackCopier copier(api);

  Snapshot small(40);  // 5 words of the 60 above SP; the slack after it stays untouched
  ASSERT_EQ(copier.copy(3, small.snapshot), CopyResult::kOk);
  EXPECT_EQ(small.snapshot.stack_size, 40u);
  EXPECT_TRUE(small.snapshot.stack_truncated);
  uint64_t first;
  std::memcpy(&first, small.buffer.data(), 8);
  EXPECT_EQ(first, 0x1111'0004u);
  for (size_t i = 40; i < small.buffer.size(); ++i) ASSERT_EQ(small.buffer[i], 0xAB) << i;

  Snapshot big(1 << 16);  // the whole stack above SP, nothing beyond its base
  ASSERT_EQ(copier.copy(3, big.snapshot), CopyResult::kOk);
  EXPECT_EQ(big.snapshot.stack_size, 60u * 8);
  EXPECT_FALSE(big.snapshot.stack_truncated);
  EXPECT_EQ(big.buffer[60 * 8], 0xAB);

  t.regs[kRegSp] = stack.base() + 64;  // SP off the thread's stack: registers only
  ASSERT_EQ(copier.copy(3, big.snapshot), CopyResult::kOk);
  EXPECT_EQ(big.snapshot.stack_size, 0u);
  EXPECT_FALSE(big.snapshot.stack_found);
  EXPECT_FALSE(big.snapshot.stack_region_known);

  t.regs[kRegSp] = stack.at(4);
  t.bounds = {};  // not a pthread: its stack is unknown
  ASSERT_EQ(copier.copy(3, big.snapshot), CopyResult::kOk);
  EXPECT_EQ(big.snapshot.stack_size, 0u);
  EXPECT_EQ(api.suspended_now(), 0);
}

class NoModules final : public internal::ModuleLister {
 public:
  bool changed() override { return false; }
  void list(std::vector<internal::ModuleInfo>&) override {}
};

// The sampler's loop over the Mach lister and copier: a thread whose CPU time did not move is
// not stopped again (its previous stack is repeated); one that ran is.
TEST(MachBackendTest, TheSamplerSkipsThreadsWhoseCpuTimeDidNotMove) {
  auto api = std::make_shared<FakeMachApi>();
  api->add(FakeMachApi::kSelfTid);
  ScriptedStack stack;
  FakeThread& t = api->add(3);
  stack.script(t);
  t.times = {1000, 0, false};
  internal::RingBuffer ring(1 << 20);
  internal::MetadataQueue metadata;
  internal::SamplerConfig config;
  config.stack_copy_size = 4096;
  {
    internal::Sampler sampler(config, std::make_unique<MachStackCopier>(*api, api),
                              std::make_unique<internal::FramePointerUnwinder>(),
                              std::make_unique<MachThreadLister>(*api, api),
                              std::make_unique<NoModules>(), ring, metadata);
    sampler.tick();
    const int first = api->thread(3).suspensions;
    EXPECT_GE(first, 1);
    sampler.tick();
    sampler.tick();
    EXPECT_EQ(api->thread(3).suspensions, first);  // idle: not stopped again
    api->thread(3).times.user_ns += 500;
    // Asleep at its last checks, it is looked at again after a few intervals (backing off).
    for (int i = 0; i < 200 && api->thread(3).suspensions == first; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      sampler.tick();
    }
    EXPECT_EQ(api->thread(3).suspensions, first + 1);
    EXPECT_EQ(api->self_suspensions(), 0);
    EXPECT_EQ(api->suspended_now(), 0);
    EXPECT_EQ(api->allocations_while_suspended(), 0u);
  }
  EXPECT_EQ(api->outstanding_references(), 0);
  EXPECT_EQ(api->outstanding_arrays(), 0);
}

}  // namespace
}  // namespace inprof::testing
