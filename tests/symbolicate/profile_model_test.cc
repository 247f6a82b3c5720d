#include "read/profile_model.h"

#include <gtest/gtest.h>

#include "dump/dump_reader.h"
#include "test_support.h"

namespace {

using namespace inprof::internal;
using inprof::symbolicate::kNoStack;
using inprof::symbolicate::ProfileModel;

SampleRecord make_sample(uint64_t tid, uint64_t time, std::vector<uint64_t> frames,
                         uint32_t flags = 0) {
  SampleRecord s;
  s.tid = tid;
  s.time_ns = time;
  s.frames = std::move(frames);
  s.flags = flags;
  return s;
}

// A process sampled every 1 ms, and thread 1's first sample at 0.
void start_at_one_ms(ProfileModel& m) {
  ProcessRecord process;
  process.interval_ns = 1000000;
  m.on_process(process);
  m.on_sample(make_sample(1, 0, {0x10, 0x20}));
}

TEST(ProfileModel, InternsEachDistinctStackOnce) {
  ProfileModel m;
  for (int i = 0; i < 100; ++i) m.on_sample(make_sample(1, i, {0x10, 0x20, 0x30}));
  m.on_sample(make_sample(2, 5, {0x10, 0x20, 0x30}));
  m.on_sample(make_sample(2, 6, {0x10, 0x20}));
  EXPECT_EQ(m.stack_count(), 2u);
  EXPECT_EQ(m.sample_count(), 102u);
  ASSERT_EQ(m.threads().size(), 2u);
  EXPECT_EQ(m.threads()[0].samples[0].stack, m.threads()[1].samples[0].stack);
  EXPECT_NE(m.threads()[1].samples[0].stack, m.threads()[1].samples[1].stack);
}

TEST(ProfileModel, FlagsThatChangeConversionSplitStacks) {
  ProfileModel m;
  m.on_sample(make_sample(1, 1, {0x10, 0x20}));
  m.on_sample(make_sample(1, 2, {0x10, 0x20}, kSampleTruncatedCopy));
  // Registers only: the stack gets a [no stack] root (issue 21).
  m.on_sample(make_sample(1, 3, {0x10, 0x20}, kSampleNoStack));
  m.on_sample(make_sample(1, 4, {0x10, 0x20}, kSampleTruncatedCopy));
  EXPECT_EQ(m.stack_count(), 3u);
  EXPECT_NE(m.threads()[0].samples[0].stack, m.threads()[0].samples[2].stack);
  EXPECT_EQ(m.threads()[0].samples[1].stack, m.threads()[0].samples[3].stack);
  EXPECT_EQ(m.stack(m.threads()[0].samples[1].stack).flags, uint32_t(kSampleTruncatedCopy));
}

TEST(ProfileModel, RepeatReusesTheThreadsPreviousStack) {
  ProfileModel m;
  m.on_sample_repeat(SampleRepeatRecord{1, 0, std::nullopt});  // nothing before it
  m.on_sample(make_sample(1, 1, {0x10, 0x20}));
  m.on_sample(make_sample(2, 2, {0x99}));
  m.on_sample_repeat(SampleRepeatRecord{1, 3, 500});
  m.on_sample_repeat(SampleRepeatRecord{2, 4, std::nullopt});
  const auto& t1 = m.threads()[0].samples;
  const auto& t2 = m.threads()[1].samples;
  ASSERT_EQ(t1.size(), 3u);
  EXPECT_EQ(t1[0].stack, kNoStack);
  EXPECT_EQ(t1[2].stack, t1[1].stack);
  EXPECT_EQ(t1[2].time_ns, 3u);
  EXPECT_EQ(t1[2].cpu_delta_ns, std::optional<uint64_t>(500));
  EXPECT_EQ(t2[1].stack, t2[0].stack);
  EXPECT_EQ(m.orphan_repeats(), 1u);
  EXPECT_TRUE(m.any_cpu_delta());
}

TEST(ProfileModel, ALongSleepIsSampledAcrossItsLength) {
  ProfileModel m;
  start_at_one_ms(m);
  // Asleep 200 ms (no CPU): samples 50 ms apart in it, each on the stack it slept in.
  m.on_sample_repeat(SampleRepeatRecord{1, 200000000, uint64_t{0}});
  // Ran meanwhile (CPU): nothing is made up.
  m.on_sample_repeat(SampleRepeatRecord{1, 400000000, uint64_t{300000}});
  const std::vector<RawSample> samples = m.threads()[0].samples.to_vector();
  ASSERT_EQ(samples.size(), 6u);
  for (size_t i = 1; i < 5; ++i) {
    EXPECT_EQ(samples[i].time_ns, i * 50000000u);
    EXPECT_EQ(samples[i].stack, samples[0].stack);
    EXPECT_EQ(samples[i].cpu_use, CpuUse::kNone);
  }
  EXPECT_EQ(samples[5].time_ns, 400000000u);
}

TEST(ProfileModel, CpuOfASleepingCopyRanUnseenAboveIt) {
  ProfileModel m;
  start_at_one_ms(m);
  // Copied asleep in a system call 50 ms later, with 3 ms of CPU run since: the sample is the
  // sleep (no CPU, idle); the 3 ms are a sample of their own at the same time, on the same
  // frames under [ran between samples] (kSampleRanUnseen), never the sleeping stack's CPU.
  SampleRecord asleep = make_sample(1, 50000000, {0x30, 0x20});
  asleep.wait = SampleWait{202, 0x1000, 0};
  asleep.cpu_delta_ns = 3000000;
  m.on_sample(asleep);
  const std::vector<RawSample> samples = m.threads()[0].samples.to_vector();
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[1].cpu_delta_ns, std::optional<uint64_t>(0));
  EXPECT_NE(samples[1].cpu_use, CpuUse::kMostly);
  EXPECT_EQ(m.stack(samples[1].stack).flags & kSampleRanUnseen, 0u);
  EXPECT_EQ(samples[2].time_ns, 50000000u);
  EXPECT_EQ(samples[2].cpu_delta_ns, std::optional<uint64_t>(3000000));
  EXPECT_EQ(samples[2].cpu_use, CpuUse::kMostly);
  EXPECT_NE(m.stack(samples[2].stack).flags & kSampleRanUnseen, 0u);
  EXPECT_EQ(m.stack(samples[2].stack).frames, m.stack(samples[1].stack).frames);
  // A later repeat is of the stack it sleeps in; one with CPU (its tail as it ended) has that
  // CPU above it, run unseen.
  m.on_sample_repeat(SampleRepeatRecord{1, 60000000, uint64_t{0}});
  EXPECT_EQ(m.threads()[0].samples.to_vector().back().stack, samples[1].stack);
  m.on_sample_repeat(SampleRepeatRecord{1, 70000000, uint64_t{400000}});
  const RawSample tail = m.threads()[0].samples.to_vector().back();
  EXPECT_EQ(tail.stack, samples[2].stack);
  EXPECT_EQ(tail.cpu_use, CpuUse::kMostly);
}

TEST(ProfileModel, CpuPastSixteenIntervalsIsUnderRanBetweenSamples) {
  ProfileModel m;
  start_at_one_ms(m);
  SampleRecord late = make_sample(1, 1000000, {0x10, 0x20});
  late.flags |= kSampleOnCpu;
  late.cpu_delta_ns = 40000000;  // 40 ms on a sample 1 ms after the one before: a gap
  m.on_sample(late);
  const std::vector<RawSample> samples = m.threads()[0].samples.to_vector();
  ASSERT_EQ(samples.size(), 4u);  // the first, 16 + 8 ms under the frame alone, the sample
  EXPECT_EQ(samples[1].cpu_delta_ns, std::optional<uint64_t>(16000000));
  EXPECT_EQ(samples[2].cpu_delta_ns, std::optional<uint64_t>(8000000));
  EXPECT_EQ(samples[3].cpu_delta_ns, std::optional<uint64_t>(16000000));
  for (size_t i = 1; i <= 2; ++i) {
    EXPECT_EQ(samples[i].time_ns, 1000000u);
    EXPECT_TRUE(m.stack(samples[i].stack).frames.empty());
    EXPECT_NE(m.stack(samples[i].stack).flags & kSampleRanUnseen, 0u);
  }
  EXPECT_EQ(samples[3].stack, samples[0].stack);
  EXPECT_EQ(m.gap_samples(), 1u);
  EXPECT_EQ(m.gap_cpu_ns(), 24000000u);
}

TEST(ProfileModel, ThreadsKeepLatestNameAndLifetime) {
  ProfileModel m;
  m.on_thread_start(ThreadRecord{7, 10, kThreadMain, "first"});
  m.on_thread_name(ThreadRecord{7, 20, 0, "renamed"});
  m.on_thread_end(ThreadEndRecord{7, 30});
  m.on_sample(make_sample(8, 15, {0x1}));
  ASSERT_EQ(m.threads().size(), 2u);
  EXPECT_EQ(m.threads()[0].name, "renamed");
  EXPECT_TRUE(m.threads()[0].is_main);
  EXPECT_EQ(m.threads()[0].start_ns, std::optional<uint64_t>(10));
  EXPECT_EQ(m.threads()[0].end_ns, std::optional<uint64_t>(30));
  EXPECT_EQ(m.threads()[1].tid, 8u);
  EXPECT_TRUE(m.threads()[1].name.empty());
}

TEST(ProfileModel, ModuleUnloadSetsTheUnloadTime) {
  ProfileModel m;
  ModuleRecord a;
  a.id = 5;
  a.time_ns = 3;
  m.on_module_load(a);
  m.on_module_unload(ModuleUnloadRecord{5, 9});
  m.on_module_unload(ModuleUnloadRecord{6, 9});  // unknown id: ignored
  ASSERT_EQ(m.modules().size(), 1u);
  EXPECT_EQ(m.modules()[0].unload_ns, 9u);
}

TEST(ProfileModel, ReadsADumpFile) {
  symtest::TempDir dir;
  std::string path = dir.path("a.inprof");
  {
    symtest::DumpFile d(path);
    d.process(symtest::test_process());
    d.sample(1, 100, {0x1000, 0x2000});
    d.repeat(1, 200);
    d.end(300);
    d.close();
  }
  ProfileModel m;
  DumpReadResult r = read_dump_file(path, m);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(m.process()->pid, 4242u);
  EXPECT_EQ(m.stack_count(), 1u);
  EXPECT_EQ(m.sample_count(), 2u);
  EXPECT_EQ(m.end_ns(), std::optional<uint64_t>(300));
}

}  // namespace
