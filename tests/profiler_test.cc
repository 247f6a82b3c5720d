// The public API driven for real: sessions that sample this test process.
#include "inprof/profiler.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "dump/dump_reader.h"
#include "session/process_info.h"
#include "session/stop_trigger.h"
#include "test_util.h"
#include "unwind_targets/unwind_targets.h"

namespace inprof {
namespace {

using internal::DumpReadResult;
using internal::SampleRecord;

struct ProfilerDump : internal::DumpVisitor {
  std::vector<internal::ThreadRecord> threads, names;
  std::vector<SampleRecord> samples;
  size_t repeats = 0;
  std::vector<internal::ModuleRecord> modules;
  internal::StatsRecord stats;
  bool has_process = false;
  void on_process(const internal::ProcessRecord&) override { has_process = true; }
  void on_module_load(const internal::ModuleRecord& r) override { modules.push_back(r); }
  void on_thread_start(const internal::ThreadRecord& r) override { threads.push_back(r); }
  void on_thread_name(const internal::ThreadRecord& r) override { names.push_back(r); }
  void on_sample(const SampleRecord& r) override { samples.push_back(r); }
  void on_sample_repeat(const internal::SampleRepeatRecord& r) override {
    ++repeats;
    repeat_records.push_back(r);
  }
  std::vector<internal::SampleRepeatRecord> repeat_records;
  void on_stats(const internal::StatsRecord& r) override { stats = r; }
};

class ProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("inprof-api-test-" + std::to_string(getpid()) + ".inprof"))
                .string();
    std::filesystem::remove(path_);
  }
  void TearDown() override {
    if (Profiler::is_running()) (void)Profiler::stop();
    std::filesystem::remove(path_);
  }
  Options options() {
    Options o;
    o.output_path = path_;
    return o;
  }
  DumpReadResult read(ProfilerDump& c) { return internal::read_dump_file(path_, c); }
  std::string path_;
};

std::atomic<bool> g_spin_profiler{true};

__attribute__((noinline)) void spin_here() {
  while (g_spin_profiler.load(std::memory_order_relaxed)) {
    asm volatile("" ::: "memory");
  }
}

TEST_F(ProfilerTest, SamplesABusyThreadWhereItRuns) {
  g_spin_profiler = true;
  std::atomic<uint64_t> spinner_tid{0};
  std::thread spinner([&] {
    set_thread_name("spinner");
    spinner_tid = internal::current_thread_id();
    spin_here();
  });
  while (spinner_tid == 0) std::this_thread::yield();
  ASSERT_TRUE(Profiler::start(options()));
  EXPECT_TRUE(Profiler::is_running());
  testing::wait_for_cpu(spinner.native_handle(), std::chrono::milliseconds(300));
  Status stopped = Profiler::stop();
  g_spin_profiler = false;
  spinner.join();
  ASSERT_TRUE(stopped) << stopped.message();
  EXPECT_FALSE(Profiler::is_running());

  ProfilerDump c;
  DumpReadResult r = read(c);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.complete);
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_TRUE(c.has_process);

  // The spinner is known by its given name, the main thread is marked.
  bool named = false, main_marked = false;
  for (const auto& t : c.threads) {
    if (t.tid == spinner_tid && t.name == "spinner") named = true;
    if (t.tid == internal::main_thread_id() && (t.flags & internal::kThreadMain))
      main_marked = true;
  }
  EXPECT_TRUE(named);
  EXPECT_TRUE(main_marked);

  // Nearly every spinner sample is in spin_here: its PC, or (unoptimised builds call out-of-line
  // atomic loads) a return address into it. The function is short.
  const auto begin = reinterpret_cast<uint64_t>(&spin_here);
  auto in_spin_here = [begin](uint64_t address) {
    return address >= begin && address < begin + 256;
  };
  size_t spinner_samples = 0, in_spin = 0;
  for (const auto& s : c.samples) {
    if (s.tid != spinner_tid) continue;
    ++spinner_samples;
    ASSERT_FALSE(s.frames.empty());
    bool found = in_spin_here(s.frames[0]);
    for (size_t k = 1; k < s.frames.size() && k < 4; ++k) found |= in_spin_here(s.frames[k] - 1);
    in_spin += found;
  }
  EXPECT_GT(spinner_samples, 20u);
  EXPECT_GT(in_spin * 10, spinner_samples * 9) << in_spin << " of " << spinner_samples;

  // The executable is among the modules, with its build-id.
  bool found_exe = false;
  for (const auto& m : c.modules) {
    if ((m.flags & internal::kModuleMainExecutable) && begin >= m.start && begin < m.end) {
      found_exe = true;
      EXPECT_FALSE(m.build_id.empty());
    }
  }
  EXPECT_TRUE(found_exe);
  EXPECT_EQ(c.stats.samples_dropped, 0u);
  EXPECT_EQ(c.stats.samples_recorded, c.samples.size() + c.repeats);
  // What the profiler cost is stated: its sampler and writer threads did some work.
  EXPECT_GT(c.stats.profiler_cpu_ns, 0u);
}

bool kernel_reports_switches();

TEST_F(ProfilerTest, IdleThreadsAreRepeatedNotStopped) {
  if (testing::emulator()) {
    GTEST_SKIP() << "qemu-user: a sleeping thread's stack is read through /proc/.../syscall and "
                    "process_vm_readv, which the emulator does not offer";
  }
  ASSERT_TRUE(Profiler::start(options()));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // the main thread sleeps
  ASSERT_TRUE(Profiler::stop());
  ProfilerDump c;
  ASSERT_TRUE(read(c).ok);
  size_t main_samples = 0;
  uint64_t first_ns = UINT64_MAX;
  for (const auto& s : c.samples) {
    if (s.tid != internal::main_thread_id()) continue;
    ++main_samples;
    first_ns = std::min(first_ns, s.time_ns);
  }
  size_t main_repeats = 0;
  uint64_t last_ns = 0;
  for (const auto& r : c.repeat_records) {
    if (r.tid != internal::main_thread_id()) continue;
    ++main_repeats;
    last_ns = std::max(last_ns, r.time_ns);
  }
  // One real sample when it was first seen (plus any after it woke), then repeats while it slept,
  // to the end, each weighing the time since the previous one: 2, 4 ... 16 intervals apart, or,
  // where the kernel reports its switches, one at the next check and then 1,024 intervals apart
  // (here the last at the stop); fewer on an overloaded machine.
  ASSERT_GE(main_samples, 1u);
  EXPECT_GE(main_repeats, kernel_reports_switches() ? 2u : 5u);
  EXPECT_GE(last_ns, first_ns + 300000000u);
  // Not one per interval: a process whose threads all sleep (a compiler driver waiting for cc1)
  // is not woken 1000 times a second for nothing. A loaded machine only ever ticks less.
  EXPECT_LT(main_repeats, 300u);
}

__attribute__((noinline)) void wait_first(int fd) {
  char byte;
  (void)!read(fd, &byte, 1);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void block_second(int fd) {
  char byte;
  (void)!read(fd, &byte, 1);
  asm volatile("" ::: "memory");
}

// Whether thread `tid` sleeps in read(fd) now (/proc/self/task/TID/syscall: number, then args).
bool reading(uint64_t tid, int fd) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/syscall");
  long number = -1;
  std::string arg0;
  if (!(in >> number >> arg0)) return false;
  return number == SYS_read && std::stoul(arg0, nullptr, 16) == static_cast<unsigned long>(fd);
}

// Whether this kernel lets a process watch its own threads' context switches (perf events for
// user space: perf_event_paranoid 2 or less).
bool kernel_reports_switches() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  int level = 3;
  return (in >> level) && level <= 2;
}

void* name_spin_and_end(void* arg) {
  auto* tid = static_cast<uint64_t*>(arg);
  *tid = internal::current_thread_id();
  char name[16];
  std::snprintf(name, sizeof(name), "churn-%llu", static_cast<unsigned long long>(*tid % 100000));
  pthread_setname_np(pthread_self(), name);
  const uint64_t until = internal::current_thread_cpu_ns() + 100000;
  while (internal::current_thread_cpu_ns() < until) {
  }
  return nullptr;
}

// Threads that live a fraction of a millisecond, one after another (a pool that churns): each is
// in the profile under the name it gave itself, none under its creator's (issue 40). Listing
// /proc/self/task every few milliseconds misses most of them; the kernel's records of thread
// starts and renames do not.
TEST_F(ProfilerTest, ShortLivedThreadsAreAllInTheProfileUnderTheirOwnNames) {
  if (testing::emulator() || !kernel_reports_switches()) {
    GTEST_SKIP() << "no perf events for user space here: short-lived threads may be missed";
  }
  ASSERT_TRUE(Profiler::start(options()));
  constexpr int kThreads = 1000;
  std::vector<uint64_t> tids(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    pthread_t thread;
    ASSERT_EQ(pthread_create(&thread, nullptr, name_spin_and_end, &tids[i]), 0);
    ASSERT_EQ(pthread_join(thread, nullptr), 0);
  }
  ASSERT_TRUE(Profiler::stop());
  ProfilerDump c;
  ASSERT_TRUE(read(c).ok);
  std::map<uint64_t, std::string> names;  // the last name each thread was given in the dump
  for (const auto& t : c.threads) names[t.tid] = t.name;
  for (const auto& t : c.names) names[t.tid] = t.name;
  int missing = 0, misnamed = 0;
  for (uint64_t tid : tids) {
    char want[16];
    std::snprintf(want, sizeof(want), "churn-%llu", static_cast<unsigned long long>(tid % 100000));
    auto it = names.find(tid);
    if (it == names.end()) {
      ++missing;
    } else if (it->second != want) {
      ++misnamed;
      if (misnamed < 5) ADD_FAILURE() << "thread " << tid << " named '" << it->second << "'";
    }
  }
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(misnamed, 0);
}

// A thread keeps its timer or ring for a second after it last ran, so that its next burst is
// sampled from its start. Asleep meanwhile, it is a repeat per back-off, not a record (and two
// clock reads) per tick: the kernel's records say it did not run (issue 40: 1,000 threads just
// created, a few of them found running, cost the sampler ~100 ms over the next second).
TEST_F(ProfilerTest, AThreadAsleepAfterABurstIsNotRecordedAtEveryTick) {
  if (testing::emulator() || !kernel_reports_switches()) {
    GTEST_SKIP() << "no perf events for user space here: a sleeping thread's clock is read";
  }
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const uint64_t started = internal::monotonic_ns();  // (a dump's times count from its start)
  ASSERT_TRUE(Profiler::start(options()));
  std::atomic<uint64_t> tid{0}, asleep_from{0};
  std::thread burst([&] {
    tid = internal::current_thread_id();
    const uint64_t until = internal::current_thread_cpu_ns() + 150000000;
    while (internal::current_thread_cpu_ns() < until) {
    }
    asleep_from = internal::monotonic_ns();
    wait_first(fds[0]);
  });
  while (asleep_from.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  const uint64_t woken_at = internal::monotonic_ns();
  ASSERT_EQ(write(fds[1], "x", 1), 1);
  burst.join();
  ASSERT_TRUE(Profiler::stop());
  close(fds[0]);
  close(fds[1]);
  ProfilerDump c;
  ASSERT_TRUE(read(c).ok);
  // What was written for it while it slept (after the tick that found it asleep).
  const uint64_t from = asleep_from - started + 60000000, to = woken_at - started - 20000000;
  size_t records = 0;
  for (const auto& s : c.samples) records += s.tid == tid && s.time_ns > from && s.time_ns < to;
  for (const auto& r : c.repeat_records) {
    records += r.tid == tid && r.time_ns > from && r.time_ns < to;
  }
  // Back-off: 2, 4 ... intervals apart (~9 in 520 ms). One per tick was 131 (ticks a few ms
  // apart while nothing else runs).
  EXPECT_GE(records, 1u);  // the wall-clock view keeps its sleep
  EXPECT_LT(records, 40u);
}

// A sleeping thread that wakes and blocks somewhere else, using almost no CPU in between, must
// not keep its old stack: the repeat logic may only skip threads that really did not run.
TEST_F(ProfilerTest, ThreadThatMovesBetweenWaitsGetsItsNewStack) {
  if (testing::emulator()) {
    GTEST_SKIP() << "qemu-user: a sleeping thread's stack is read through /proc/.../syscall and "
                    "process_vm_readv, which the emulator does not offer";
  }
  int first[2], second[2];
  ASSERT_EQ(pipe(first), 0);
  ASSERT_EQ(pipe(second), 0);
  std::atomic<uint64_t> tid{0};
  std::thread sleeper([&] {
    tid = internal::current_thread_id();
    wait_first(first[0]);
    block_second(second[0]);
  });
  while (tid == 0) std::this_thread::yield();
  ASSERT_TRUE(Profiler::start(options()));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(write(first[1], "x", 1), 1);  // it moves to its second wait
  for (int i = 0; i < 3000 && !reading(tid, second[0]); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(Profiler::stop());
  ASSERT_EQ(write(second[1], "x", 1), 1);
  sleeper.join();
  for (int fd : {first[0], first[1], second[0], second[1]}) close(fd);

  ProfilerDump c;
  ASSERT_TRUE(read(c).ok);
  std::vector<std::vector<uint64_t>> stacks;
  for (const auto& s : c.samples) {
    if (s.tid == tid) stacks.push_back(s.frames);
  }
  ASSERT_FALSE(stacks.empty());
  // Its last real sample (repeats only follow it) is in the second wait: a return address just
  // past a call in block_second (the function is far smaller than 256 bytes).
  const auto second_wait = reinterpret_cast<uint64_t>(&block_second);
  EXPECT_TRUE(std::any_of(
      stacks.back().begin(), stacks.back().end(),
      [&](uint64_t address) { return address > second_wait && address - second_wait < 256; }))
      << stacks.size() << " real samples";
  // Yet it was not copied over and over while it slept: a few real samples, the rest repeats.
  EXPECT_LT(stacks.size(), 30u) << c.repeats << " repeats in all";
}

// Code without frame pointers, sampled by a real session with the default unwinder: the walk
// reaches the thread's start (clone3) in at least 99 % of samples.
TEST_F(ProfilerTest, CompleteStacksWithoutFramePointers) {
  unwind_target_ready = 0;
  unwind_target_release = 0;
  std::atomic<uint64_t> tid{0};
  std::thread worker([&] {
    tid = internal::current_thread_id();
    target_prologue_loop();
  });
  while (!unwind_target_ready) std::this_thread::yield();
  ASSERT_TRUE(Profiler::start(options()));
  testing::wait_for_cpu(worker.native_handle(), std::chrono::milliseconds(400));
  ASSERT_TRUE(Profiler::stop());
  unwind_target_release = 1;
  worker.join();
  ProfilerDump c;
  ASSERT_TRUE(read(c).ok);
  size_t total = 0, complete = 0;
  for (const auto& s : c.samples) {
    if (s.tid != tid) continue;
    ++total;
    complete += !(s.flags & (internal::kSampleIncomplete | internal::kSampleTruncatedCopy |
                             internal::kSampleNoStack));
  }
  ASSERT_GT(total, 50u);
  EXPECT_GE(complete * 100, total * 99) << complete << " of " << total << " reached the start";
}

// Sleeping calls that Linux never restarts after a signal handler (nanosleep, poll, select,
// epoll_wait...) must neither fail with EINTR nor return early because of the profiler.
TEST_F(ProfilerTest, SleepingCallsAreNotCutShort) {
  Options o = options();
  o.interval = std::chrono::microseconds(100);
  std::atomic<int> eintr{0}, early{0};
  auto expect_full = [&](auto call, int64_t ms) {
    const auto start = std::chrono::steady_clock::now();
    const int r = call();
    if (r < 0 && errno == EINTR) ++eintr;
    if (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(ms)) ++early;
  };
  std::atomic<bool> run{true};
  std::thread sleeper([&] {
    while (run.load()) {
      // A little work first, so the profiler sees the thread running and samples it again.
      for (int i = 0; i < 200000; ++i) {
        asm volatile("" ::: "memory");
      }
      expect_full(
          [] {
            timespec t{0, 3000000};
            return nanosleep(&t, nullptr);
          },
          3);
      expect_full([] { return usleep(3000); }, 3);
      expect_full([] { return poll(nullptr, 0, 3); }, 3);
      expect_full(
          [] {
            timeval tv{0, 3000};
            return select(0, nullptr, nullptr, nullptr, &tv);
          },
          3);
      expect_full(
          [] {
            timespec t{0, 3000000};
            return clock_nanosleep(CLOCK_MONOTONIC, 0, &t, nullptr) == 0 ? 0 : -1;
          },
          3);
    }
  });
  ASSERT_TRUE(Profiler::start(o));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_TRUE(Profiler::stop());
  run = false;
  sleeper.join();
  EXPECT_EQ(eintr.load(), 0);
  EXPECT_EQ(early.load(), 0);
}

// A JIT's symbol map (perf's /tmp/perf-<pid>.map) is copied into the dump when the session
// stops: the file may be gone by the time the dump is symbolicated.
TEST_F(ProfilerTest, CopiesTheJitMapIntoTheDump) {
  const std::string map_path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
  {
    std::ofstream map(map_path);
    for (int i = 0; i < 30000; ++i) {  // over 1 MiB: several pieces
      map << std::hex << 0x7f0000000000 + i * 0x40 << " 40 LazyCompile:*jsFunction" << std::dec << i
          << " /app/script.js:" << i << "\n";
    }
  }
  ASSERT_TRUE(Profiler::start(options()));
  ASSERT_TRUE(Profiler::stop());
  std::filesystem::remove(map_path);
  struct : internal::DumpVisitor {
    std::string text;
    int pieces = 0;
    void on_jit_map(const internal::JitMapRecord& r) override {
      text += r.text;
      ++pieces;
    }
  } v;
  ASSERT_TRUE(internal::read_dump_file(path_, v).ok);
  EXPECT_GT(v.pieces, 1);
  EXPECT_EQ(std::count(v.text.begin(), v.text.end(), '\n'), 30000);
  EXPECT_NE(v.text.find("7f0000000040 40 LazyCompile:*jsFunction1 /app/script.js:1\n"),
            std::string::npos);
}

TEST_F(ProfilerTest, RefusesASecondStartAndAStopWithoutStart) {
  Status s = Profiler::stop();
  EXPECT_EQ(s.code(), Status::Code::kNotRunning);
  EXPECT_FALSE(s.message().empty());
  ASSERT_TRUE(Profiler::start(options()));
  s = Profiler::start(options());
  EXPECT_EQ(s.code(), Status::Code::kAlreadyRunning);
  EXPECT_NE(s.message().find("already running"), std::string::npos);
  EXPECT_TRUE(Profiler::stop());
}

TEST_F(ProfilerTest, RejectsOptionsOutOfRange) {
  Options o = options();
  o.interval = std::chrono::microseconds(10);
  Status s = Profiler::start(o);
  EXPECT_EQ(s.code(), Status::Code::kInvalidOption);
  EXPECT_NE(s.message().find("interval"), std::string::npos);
  o = options();
  o.buffer_size = 10;
  EXPECT_EQ(Profiler::start(o).code(), Status::Code::kInvalidOption);
  o = options();
  o.max_frames = 1;
  EXPECT_EQ(Profiler::start(o).code(), Status::Code::kInvalidOption);
  o = options();
  o.sample_signal = SIGKILL;
  EXPECT_EQ(Profiler::start(o).code(), Status::Code::kInvalidOption);
  EXPECT_FALSE(Profiler::is_running());
  EXPECT_FALSE(std::filesystem::exists(path_));
}

void user_handler(int) {}

TEST_F(ProfilerTest, RefusesASignalTheProgramHandles) {
  struct sigaction sa = {}, old = {};
  sa.sa_handler = user_handler;
  ASSERT_EQ(sigaction(SIGUSR2, &sa, &old), 0);
  Options o = options();
  o.sample_signal = SIGUSR2;
  Status s = Profiler::start(o);
  sigaction(SIGUSR2, &old, nullptr);
  EXPECT_EQ(s.code(), Status::Code::kSignalInUse);
  EXPECT_NE(s.message().find("SIGUSR2"), std::string::npos) << s.message();
  EXPECT_FALSE(std::filesystem::exists(path_));  // nothing created on failure
}

TEST_F(ProfilerTest, RestoresTheSignalDispositionOnStop) {
  Options o = options();
  o.sample_signal = SIGUSR1;
  ASSERT_TRUE(Profiler::start(o));
  ASSERT_TRUE(Profiler::stop());
  struct sigaction now = {};
  ASSERT_EQ(sigaction(SIGUSR1, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

TEST_F(ProfilerTest, ReportsAnUnwritableOutput) {
  Options o = options();
  o.output_path = "/nonexistent-dir/x.inprof";
  Status s = Profiler::start(o);
  EXPECT_EQ(s.code(), Status::Code::kOutputError);
  EXPECT_NE(s.message().find("/nonexistent-dir/x.inprof"), std::string::npos);
  EXPECT_FALSE(Profiler::is_running());
  // The signal was given back: a new session can start.
  ASSERT_TRUE(Profiler::start(options()));
  EXPECT_TRUE(Profiler::stop());
}

// A thread that blocks the signal is never interrupted: while it runs its samples are given up and
// counted, and the session still stops promptly.
TEST_F(ProfilerTest, SkipsAThreadThatBlocksTheSignal) {
  std::atomic<bool> run{true};
  std::thread blocker([&] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGURG);  // the default sampling signal
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    while (run.load()) asm volatile("" ::: "memory");  // busy, so never a repeat
  });
  Options o = options();
  o.thread_answer_timeout = std::chrono::milliseconds(2);
  ASSERT_TRUE(Profiler::start(o));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(Profiler::stop());
  run = false;
  blocker.join();
  ProfilerDump c;
  ASSERT_TRUE(read(c).ok);
  EXPECT_GT(c.stats.samples_given_up, 0u);
}

TEST_F(ProfilerTest, ScopeProfilesOnlyItsScope) {
  {
    ProfileScope scope(options());
    ASSERT_TRUE(scope.status()) << scope.status().message();
    EXPECT_TRUE(Profiler::is_running());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(Profiler::is_running());
  ProfilerDump c;
  DumpReadResult r = read(c);
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(r.complete);
}

TEST_F(ProfilerTest, StartStopManyTimes) {
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(Profiler::start(options()));
    ASSERT_TRUE(Profiler::stop());
  }
  ProfilerDump c;
  EXPECT_TRUE(read(c).complete);
}

}  // namespace
}  // namespace inprof

namespace inprof {
namespace {

// The profiler's own threads are never in the profile: here the stopper of a timed session
// (INPROF_DURATION), which waits for its deadline beside the program's threads.
TEST_F(ProfilerTest, ItsOwnStopperThreadIsNotInTheProfile) {
  ASSERT_TRUE(Profiler::start(options()));
  // A second, not 300 ms: under qemu-user the sampler's first tick (translating libdw's code,
  // reading each module's CFI) takes 100-200 ms, and a session stopped before it lists no
  // thread (failed once in the aarch64 run).
  ASSERT_TRUE(internal::arm_stop_trigger(std::chrono::milliseconds(1000), 0));
  for (int waited_ms = 0; Profiler::is_running() && waited_ms < 30000; waited_ms += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(Profiler::is_running()) << "the stopper did not stop the session";
  ProfilerDump c;
  DumpReadResult r = read(c);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(c.threads.empty());
  for (const auto& t : c.threads) EXPECT_NE(t.name.rfind("inprof-", 0), 0u) << t.name;
  for (const auto& t : c.names) EXPECT_NE(t.name.rfind("inprof-", 0), 0u) << t.name;
}

}  // namespace
}  // namespace inprof
