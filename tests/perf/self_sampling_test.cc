// Self-sampling (lib/sampling/self_sampling.h): busy threads are sampled by the kernel (a
// perf_event ring per thread, where the kernel allows it) or interrupt themselves on a per-thread
// timer and queue snapshots of themselves; the sampler collects them. These tests assert what
// happens (who is self-sampled, what reaches the ring, what is counted), never how fast. The timer
// tests force timers (INPROF_SELF_SAMPLING=timer); the kernel's are skipped where perf events are
// refused.
#include <dirent.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "../test_util.h"
#include "api/copies.h"
#include "dump/byte_io.h"
#include "dump/dump_records.h"
#include "markers/label_stack.h"
#include "sampling/module_lister.h"
#include "sampling/sampler.h"
#include "sampling/self_sample_queue.h"
#include "sampling/stack_copier.h"
#include "sampling/thread_lister.h"
#include "session/metadata_queue.h"
#include "session/process_info.h"
#include "session/ring_buffer.h"
#include "thread_switches.h"
#include "unwind/frame_pointer_unwinder.h"

namespace inprof::internal {
namespace {

using inprof::testing::voluntary_switches;

// --- The sampler with the real copier -----------------------------------------------------------

std::atomic<bool> g_spin{true};
__attribute__((noinline)) void spin() {
  while (g_spin.load(std::memory_order_relaxed)) asm volatile("" ::: "memory");
}

// Chooses the way busy threads are sampled for the Harness created in its scope.
struct Way {
  explicit Way(const char* way) { setenv("INPROF_SELF_SAMPLING", way, 1); }
  ~Way() { unsetenv("INPROF_SELF_SAMPLING"); }
};

// Whether this kernel lets the process sample its own threads with perf events.
bool kernel_sampling_allowed() {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.sample_period = 1000000;
  attr.sample_type = PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
  attr.sample_regs_user = 1;
  attr.sample_stack_user = 1024;
  attr.exclude_kernel = 1;
  const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  if (fd < 0) return false;
  close(static_cast<int>(fd));
  return !testing::emulator();
}

// Descriptors of this process that are perf events.
int perf_event_descriptors() {
  int count = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  while (dirent* entry = readdir(dir)) {
    char link[300], target[128];
    std::snprintf(link, sizeof(link), "/proc/self/fd/%s", entry->d_name);
    const ssize_t n = readlink(link, target, sizeof(target) - 1);
    if (n > 0 && std::string_view(target, static_cast<size_t>(n)).find("perf_event") !=
                     std::string_view::npos) {
      ++count;
    }
  }
  closedir(dir);
  return count;
}

// Kernel sampling rings mapped in this process (each one a perf event kept alive by its mapping:
// no descriptor is kept for it).
int perf_event_rings() {
  std::FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) return -1;
  int count = 0;
  char line[512];
  while (std::fgets(line, sizeof(line), maps)) {
    if (std::strstr(line, "perf_event") != nullptr) ++count;
  }
  std::fclose(maps);
  return count;
}

struct Harness {
  explicit Harness(uint64_t interval_ns) {
    Status status;
    StackCopier::Config config;
    config.interval = std::chrono::nanoseconds(interval_ns);
    config.timeout = std::chrono::milliseconds(50);
    auto copier = StackCopier::create(config, &status);
    EXPECT_TRUE(copier) << status.message();
    SamplerConfig sc;
    sc.interval_ns = interval_ns;
    sc.answer_timeout_ns = 20000000;
    sampler =
        std::make_unique<Sampler>(sc, std::move(copier), std::make_unique<FramePointerUnwinder>(),
                                  ThreadLister::create(), ModuleLister::create(), ring, metadata);
    sampler->exclude_thread(current_thread_id());
  }
  // Ticks (with the sampler's period in between) until `done` or a generous limit: a bound
  // against hanging, not a timing assertion.
  template <typename Done>
  bool tick_until(Done done, int limit_ticks = 20000) {
    for (int i = 0; i < limit_ticks; ++i) {
      sampler->tick();
      drain();
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::nanoseconds(sampler->period_ns()));
    }
    return false;
  }
  void drain() {
    ring.drain([this](uint8_t type, std::span<const uint8_t> payload) {
      ByteReader r(payload);
      if (type == static_cast<uint8_t>(RecordType::kSample)) {
        SampleRecord s;
        if (decode(r, s)) {
          ++samples[s.tid];
          if (!s.frames.empty()) ++with_frames[s.tid];
          if (!s.labels.empty()) ++with_labels[s.tid];
        }
      } else if (type == static_cast<uint8_t>(RecordType::kSampleRepeat)) {
        SampleRepeatRecord s;
        if (decode(r, s)) ++repeats[s.tid];
      }
    });
    metadata.take();
  }

  RingBuffer ring{8 << 20};
  MetadataQueue metadata;
  std::unique_ptr<Sampler> sampler;
  std::map<uint64_t, uint64_t> samples, with_frames, with_labels, repeats;
};

TEST(SelfSampling, ABusyThreadSamplesItselfAndASleepingOneDoesNot) {
  if (testing::emulator()) GTEST_SKIP() << "qemu-user: per-thread timers are not emulated alike";
  Way timers("timer");
  g_spin = true;
  std::atomic<uint64_t> busy_tid{0}, idle_tid{0};
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::thread busy([&] {
    busy_tid = current_thread_id();
    spin();
  });
  std::thread idle([&] {
    idle_tid = current_thread_id();
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return done; });
  });
  while (!busy_tid || !idle_tid) std::this_thread::yield();
  {
    Harness h(500000);  // 2 kHz: the sampler ticks every 1 ms, the busy thread twice as often
    ASSERT_NE(h.sampler->period_ns(), 0u);
    EXPECT_TRUE(h.tick_until([&] { return h.sampler->self_sampled_threads() == 1; }));
    // From now on its samples come from its own timer: a few hundred of them.
    const uint64_t before = h.samples[busy_tid];
    EXPECT_TRUE(h.tick_until([&] { return h.samples[busy_tid] >= before + 300; }));
    EXPECT_EQ(h.sampler->self_sampled_threads(), 1u) << "only the busy thread";
    // Its timer runs on its CPU clock, which the kernel checks at its tick: at intervals below
    // the tick, one stack stands for several (the others are repeats that carry its CPU).
    EXPECT_GT(h.with_frames[busy_tid], 10u);
    EXPECT_GT(h.repeats[idle_tid], 0u) << "the sleeping thread is recorded as repeats";
    EXPECT_EQ(h.sampler->stats().threads_timed_out, 0u);
    EXPECT_EQ(h.sampler->stats().samples_dropped, 0u);
  }
  g_spin = false;
  busy.join();
  {
    std::lock_guard lock(mutex);
    done = true;
  }
  cv.notify_all();
  idle.join();
}

TEST(SelfSampling, AThreadThatGoesToSleepReturnsToPerTickCopies) {
  if (testing::emulator()) GTEST_SKIP() << "qemu-user: per-thread timers are not emulated alike";
  std::atomic<bool> keep_busy{true};
  std::atomic<uint64_t> tid{0};
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::thread worker([&] {
    tid = current_thread_id();
    while (keep_busy.load(std::memory_order_relaxed)) asm volatile("" ::: "memory");
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return done; });
  });
  while (!tid) std::this_thread::yield();
  {
    Harness h(1000000);
    EXPECT_TRUE(h.tick_until([&] { return h.sampler->self_sampled_threads() == 1; }));
    keep_busy = false;
    EXPECT_TRUE(h.tick_until([&] { return h.sampler->self_sampled_threads() == 0; }));
    const uint64_t repeats = h.repeats[tid];
    EXPECT_TRUE(h.tick_until([&] { return h.repeats[tid] > repeats + 5; }))
        << "asleep again: recorded as repeats, not interrupted";
    EXPECT_EQ(h.sampler->stats().threads_timed_out, 0u);
  }
  {
    std::lock_guard lock(mutex);
    done = true;
  }
  cv.notify_all();
  worker.join();
}

// A busy thread that starts blocking the signal loses its timer (its status is read again every
// window, and a timer that goes unanswered while it runs is abandoned): its ticks are counted as
// given up from then on, and the sampler keeps going.
TEST(SelfSampling, AThreadThatBlocksTheSignalIsCountedAsTimedOut) {
  if (testing::emulator()) GTEST_SKIP() << "qemu-user: per-thread timers are not emulated alike";
  Way timers("timer");
  std::atomic<bool> block{false}, blocked{false}, stop{false};
  std::atomic<uint64_t> tid{0};
  std::thread worker([&] {
    tid = current_thread_id();
    while (!block.load(std::memory_order_relaxed)) asm volatile("" ::: "memory");
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGURG);  // the default sampling signal
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    blocked = true;
    while (!stop.load(std::memory_order_relaxed)) asm volatile("" ::: "memory");
  });
  while (!tid) std::this_thread::yield();
  {
    Harness h(1000000);
    EXPECT_TRUE(h.tick_until([&] { return h.sampler->self_sampled_threads() == 1; }));
    block = true;
    while (!blocked) std::this_thread::yield();
    EXPECT_TRUE(h.tick_until([&] {
      const SamplerStats s = h.sampler->stats();
      return h.sampler->self_sampled_threads() == 0 && s.samples_given_up > 0;
    }));
    EXPECT_EQ(h.sampler->self_sampled_threads(), 0u);
    const uint64_t ticks = 50;
    for (uint64_t i = 0; i < ticks; ++i) h.sampler->tick();  // never hangs on it
  }
  stop = true;
  worker.join();
}

// A self-sampled thread may exit at any moment: its queued samples are kept, nothing else
// happens.
TEST(SelfSampling, ThreadsExitingWhileSelfSampledAreFine) {
  if (testing::emulator()) GTEST_SKIP() << "qemu-user: per-thread timers are not emulated alike";
  Harness h(200000);
  for (int round = 0; round < 20; ++round) {
    std::atomic<bool> stop{false};
    std::thread worker([&] {
      while (!stop.load(std::memory_order_relaxed)) asm volatile("" ::: "memory");
    });
    h.tick_until([&] { return h.sampler->self_sampled_threads() == 1; }, 200);
    stop = true;
    worker.join();
  }
  EXPECT_TRUE(h.tick_until([&] { return h.sampler->self_sampled_threads() == 0; }));
  EXPECT_EQ(h.sampler->stats().samples_dropped, 0u);
}

// A fork child inherits no timer: it runs to its end undisturbed while the parent's busy thread
// keeps sampling itself.
TEST(SelfSampling, ForkChildrenAreFine) {
  if (testing::emulator()) GTEST_SKIP() << "qemu-user: per-thread timers are not emulated alike";
  g_spin = true;
  std::thread busy(spin);
  Harness h(200000);
  EXPECT_TRUE(h.tick_until([&] { return h.sampler->self_sampled_threads() == 1; }));
  const pid_t child = fork();
  if (child == 0) {
    StackCopier::release_after_fork();
    // Not one of the parent's rings stays open in it (they would keep its threads sampled).
    if (perf_event_rings() != 0 || perf_event_descriptors() != 0) _exit(3);
    volatile uint64_t x = 0;
    for (int i = 0; i < 50000000; ++i) x = x + i;
    _exit(0);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_EQ(h.sampler->self_sampled_threads(), 1u);
  g_spin = false;
  busy.join();
}

// --- The kernel's sampling (perf events) ------------------------------------------------------

// Starts a thread spinning in spin() until g_spin is cleared; `tid` holds its id on return.
std::thread start_spinner(std::atomic<uint64_t>& tid) {
  g_spin = true;
  std::thread t([&tid] {
    tid = current_thread_id();
    spin();
  });
  while (!tid) std::this_thread::yield();
  return t;
}

uint64_t cpu_ns_of(std::thread& t) {
  clockid_t clock;
  timespec ts{};
  if (pthread_getcpuclockid(t.native_handle(), &clock) != 0 || clock_gettime(clock, &ts) != 0) {
    return 0;
  }
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// The point of the kernel's way: a busy thread gets a stack of its own for every interval of its
// CPU (a timer's signal comes at the scheduler's tick, 4 ms apart at 250 Hz, whatever the
// interval). Samples the kernel could not write (the sampler was late) are counted, not hidden.
TEST(KernelSampling, ABusyThreadGetsAStackForEveryIntervalOfItsCpu) {
  if (!kernel_sampling_allowed()) GTEST_SKIP() << "perf events refused here";
  std::atomic<uint64_t> tid{0};
  std::thread busy = start_spinner(tid);
  {
    constexpr uint64_t kInterval = 500000;
    Harness h(kInterval);
    EXPECT_TRUE(h.tick_until([&] { return h.sampler->self_sampled_threads() == 1; }));
    EXPECT_TRUE(h.tick_until([&] { return h.with_frames[tid] > 0; }));
    const uint64_t frames_before = h.with_frames[tid];
    const uint64_t late_before = h.sampler->stats().ticks_late;
    const uint64_t cpu_before = cpu_ns_of(busy);
    EXPECT_TRUE(h.tick_until([&] { return h.with_frames[tid] >= frames_before + 400; }));
    const uint64_t cpu = cpu_ns_of(busy) - cpu_before;
    const uint64_t stacks = h.with_frames[tid] - frames_before;
    const uint64_t late = h.sampler->stats().ticks_late - late_before;
    // Half, for the samples still in flight and the CPU of the last interval; timers give an
    // eighth here (2 kHz against the 250 Hz tick).
    EXPECT_GE(2 * (stacks + late), cpu / kInterval)
        << stacks << " stacks and " << late << " lost for " << cpu / 1000 << " us of CPU";
    EXPECT_GT(perf_event_rings(), 0) << "sampled by the kernel, not by a timer";
    EXPECT_EQ(perf_event_descriptors(), 0) << "a ring keeps no descriptor in the program's table";
    EXPECT_EQ(h.sampler->stats().samples_dropped, 0u);
  }
  EXPECT_EQ(perf_event_rings(), 0) << "every ring is unmapped when the sampler goes";
  g_spin = false;
  busy.join();
}

// Spins `depth` calls below its caller, each frame holding 256 bytes.
__attribute__((noinline)) void spin_below(int depth) {
  volatile char pad[256];
  pad[0] = static_cast<char>(depth);
  if (depth > 0) {
    spin_below(depth - 1);
  } else {
    spin();
  }
  asm volatile("" : : "r"(pad) : "memory");
}

// Two busy threads at 10 kHz whose walks need some KiB of stack: both keep a ring of their own
// within the memory budget (the copy follows what the walks use; a ring the power-of-two rounding
// would take over the budget holds fewer records) rather than one of them going to a timer,
// which gets a stack only at the scheduler's tick.
TEST(KernelSampling, TwoBusyThreadsAtTenKilohertzBothStayWithTheKernel) {
  if (!kernel_sampling_allowed()) GTEST_SKIP() << "perf events refused here";
  g_spin = true;
  std::atomic<uint64_t> tids[2] = {0, 0};
  std::thread busy[2];
  for (int i = 0; i < 2; ++i) {
    busy[i] = std::thread([&, i] {
      tids[i] = current_thread_id();
      spin_below(24);
    });
  }
  while (!tids[0] || !tids[1]) std::this_thread::yield();
  {
    Harness h(100000);
    EXPECT_TRUE(h.tick_until([&] { return h.sampler->self_sampled_threads() == 2; }));
    EXPECT_TRUE(h.tick_until(
        [&] { return h.with_frames[tids[0]] >= 3000 && h.with_frames[tids[1]] >= 3000; }));
    EXPECT_EQ(perf_event_rings(), 2) << "each thread keeps its ring";
    EXPECT_EQ(h.sampler->self_sampled_threads(), 2u);
    EXPECT_EQ(h.sampler->stats().samples_dropped, 0u);
  }
  g_spin = false;
  for (std::thread& t : busy) t.join();
}

// The sampler's wake-ups (its voluntary switches) while a busy thread uses `measured_ns` of CPU,
// after `warm_ns` to settle, with the sampler running on a thread of its own; stopped after.
struct WakeUps {
  uint64_t wakes, cpu_ns, wall_ns;
};
WakeUps count_wake_ups(Harness& h, std::thread& busy, uint64_t warm_ns, uint64_t measured_ns,
                       std::chrono::milliseconds poll) {
  std::atomic<uint64_t> sampler_tid{0};
  std::thread runner([&] {
    sampler_tid = current_thread_id();
    h.sampler->exclude_thread(sampler_tid);
    h.sampler->run();
  });
  // Waits (1,200 polls at most) until the busy thread has used `ns` more of CPU.
  auto after_cpu = [&](uint64_t ns) {
    const uint64_t start = cpu_ns_of(busy);
    for (int i = 0; i < 1200 && cpu_ns_of(busy) - start < ns; ++i) {
      std::this_thread::sleep_for(poll);
    }
    return cpu_ns_of(busy) - start;
  };
  after_cpu(warm_ns);
  const uint64_t wakes_before = voluntary_switches(sampler_tid);
  const auto start = std::chrono::steady_clock::now();
  WakeUps counted{};
  counted.cpu_ns = after_cpu(measured_ns);
  counted.wall_ns = static_cast<uint64_t>(
      std::chrono::nanoseconds(std::chrono::steady_clock::now() - start).count());
  counted.wakes = voluntary_switches(sampler_tid) - wakes_before;
  h.sampler->request_stop();
  runner.join();
  h.drain();
  return counted;
}

// A ring that fills before its tick is collected by a tick taken then, not by a wake-up of its
// own followed by the tick's a moment later. The kernel wakes a ring's reader every three quarters
// of the ring's size of samples written, drained or not: a thread that runs all the time fills
// xz's and this test's 32 KiB ring (2 KiB copies) to that point in about 10 ms, under ticks 12 ms
// apart once the ring has settled. Then the sampler wakes once per ring's worth (132 times in
// 125 tick periods here), where it used to wake at every ring's worth and every tick (246-252).
// Counted, not timed; a machine too loaded to give the thread its CPU cannot show it (skipped).
TEST(KernelSampling, TheSamplerWakesOncePerCollection) {
  if (!kernel_sampling_allowed()) GTEST_SKIP() << "perf events refused here";
  std::atomic<uint64_t> tid{0};
  std::thread busy = start_spinner(tid);
  {
    Harness h(1000000);
    // The ring finds its size (64 samples), then holds it for 500 ms.
    const WakeUps w =
        count_wake_ups(h, busy, 1500000000, 1500000000, std::chrono::milliseconds(50));
    EXPECT_GT(h.with_frames[tid], 0u);
    EXPECT_EQ(h.sampler->stats().samples_dropped, 0u);
    g_spin = false;
    busy.join();
    if (10 * w.cpu_ns < 9 * w.wall_ns) {
      GTEST_SKIP() << "the busy thread got " << 100 * w.cpu_ns / w.wall_ns
                   << " % of a CPU: too loaded";
    }
    const uint64_t periods = w.wall_ns / kSettledCollectPeriodNs;
    EXPECT_LE(2 * w.wakes, 3 * periods + 4)
        << w.wakes << " wake-ups of the sampler in " << periods << " tick periods ("
        << w.cpu_ns / 1000000 << " ms of sampled CPU in " << w.wall_ns / 1000000 << " ms)";
  }
}

// A thread on a timer sends at most one signal per scheduler tick, and its queue holds a dozen
// snapshots of a shallow stack: the sampler collects it every kCollectPeriodNs, not at every
// interval (it woke 1,000 times a second for one busy thread, 58 ms of its CPU a second against
// the rings' 12). Counted, not timed; skipped where the busy thread cannot get its CPU.
TEST(SelfSampling, ATimersQueueIsCollectedOncePerCollectPeriod) {
  if (testing::emulator()) GTEST_SKIP() << "qemu-user: per-thread timers are not emulated alike";
  Way timers("timer");
  g_spin = true;
  std::atomic<uint64_t> tid{0};
  std::thread busy = start_spinner(tid);
  {
    Harness h(1000000);
    // On its timer, its first snapshots drained.
    const WakeUps w = count_wake_ups(h, busy, 100000000, 400000000, std::chrono::milliseconds(10));
    EXPECT_EQ(h.sampler->self_sampled_threads(), 0u) << "stopped";
    EXPECT_GT(h.with_frames[tid], 0u);
    EXPECT_EQ(h.sampler->stats().samples_dropped, 0u);
    EXPECT_EQ(h.sampler->stats().threads_timed_out, 0u);
    g_spin = false;
    busy.join();
    if (10 * w.cpu_ns < 9 * w.wall_ns) {
      GTEST_SKIP() << "the busy thread got " << 100 * w.cpu_ns / w.wall_ns
                   << " % of a CPU: too loaded";
    }
    // At every interval it would be 4 per collect period (120 per 100 here).
    const uint64_t periods = w.wall_ns / kCollectPeriodNs;
    EXPECT_LE(w.wakes, 2 * periods + 4)
        << w.wakes << " wake-ups of the sampler in " << periods << " collect periods ("
        << w.cpu_ns / 1000000 << " ms of sampled CPU in " << w.wall_ns / 1000000 << " ms)";
  }
}

// Nothing reaches the thread: one that blocks every signal (or waits for them in sigwait) is
// sampled all the same, and never timed out.
TEST(KernelSampling, AThreadThatBlocksEverySignalIsSampledAllTheSame) {
  if (!kernel_sampling_allowed()) GTEST_SKIP() << "perf events refused here";
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> tid{0};
  std::thread worker([&] {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    tid = current_thread_id();
    while (!stop.load(std::memory_order_relaxed)) asm volatile("" ::: "memory");
  });
  while (!tid) std::this_thread::yield();
  {
    Harness h(1000000);
    EXPECT_TRUE(h.tick_until([&] { return h.sampler->self_sampled_threads() == 1; }));
    // (Its first ticks, before it had a ring, are counted as given up.)
    const uint64_t given_up = h.sampler->stats().samples_given_up;
    EXPECT_TRUE(h.tick_until([&] { return h.with_frames[tid] >= 100; }));
    EXPECT_EQ(h.sampler->stats().threads_timed_out, 0u);
    EXPECT_EQ(h.sampler->stats().samples_given_up, given_up);
    EXPECT_EQ(h.sampler->self_sampled_threads(), 1u);
  }
  stop = true;
  worker.join();
}

// A label scope keeps a record in the thread's stack: a thread whose first label appears while
// the kernel samples it stays with the kernel, and the kernel's copies carry the label.
TEST(KernelSampling, AThreadWhoseLabelScopeAppearsLaterKeepsItsRingAndHasTheLabel) {
  if (!kernel_sampling_allowed()) GTEST_SKIP() << "perf events refused here";
  std::atomic<bool> label{false}, stop{false};
  std::atomic<uint64_t> tid{0};
  std::thread worker([&] {
    tid = current_thread_id();
    while (!label.load(std::memory_order_relaxed)) asm volatile("" ::: "memory");
    LabelRecord record;  // what LabelScope keeps
    write_label_record(&record, "later", 0);
    here::label_push("later", reinterpret_cast<uint64_t>(&record), 0, true);
    while (!stop.load(std::memory_order_relaxed)) asm volatile("" ::: "memory");
    clear_label_record(&record);
    here::label_pop();
  });
  while (!tid) std::this_thread::yield();
  {
    Harness h(1000000);
    EXPECT_TRUE(h.tick_until([&] { return h.with_frames[tid] >= 20; }));
    EXPECT_EQ(h.with_labels[tid], 0u);
    EXPECT_EQ(perf_event_rings(), 1);
    label = true;
    EXPECT_TRUE(h.tick_until([&] { return h.with_labels[tid] >= 20; }))
        << "no labelled sample after the label was pushed";
    EXPECT_EQ(perf_event_rings(), 1) << "the thread left the kernel for a timer";
  }
  stop = true;
  worker.join();
}

// A label pushed without a record (the C API's) is not in the kernel's copies: the thread moves
// to a timer, whose handler reads the label stack, and its samples carry the label from then on.
TEST(KernelSampling, AThreadWhoseUnrecordedLabelAppearsLaterMovesToATimerWithIt) {
  if (!kernel_sampling_allowed()) GTEST_SKIP() << "perf events refused here";
  std::atomic<bool> label{false}, stop{false};
  std::atomic<uint64_t> tid{0};
  std::thread worker([&] {
    tid = current_thread_id();
    while (!label.load(std::memory_order_relaxed)) asm volatile("" ::: "memory");
    uint64_t key = 0;
    here::label_push("later", reinterpret_cast<uint64_t>(&key), 0, false);
    while (!stop.load(std::memory_order_relaxed)) asm volatile("" ::: "memory");
    here::label_pop();
  });
  while (!tid) std::this_thread::yield();
  {
    Harness h(1000000);
    EXPECT_TRUE(h.tick_until([&] { return h.with_frames[tid] >= 20; }));
    EXPECT_EQ(h.with_labels[tid], 0u);
    label = true;
    EXPECT_TRUE(h.tick_until([&] { return h.with_labels[tid] >= 20; }))
        << "no labelled sample after the label was pushed";
    EXPECT_EQ(perf_event_rings(), 0) << "the thread stayed with the kernel";
  }
  stop = true;
  worker.join();
}

}  // namespace
}  // namespace inprof::internal
