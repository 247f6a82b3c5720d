// A wake storm: a thousand threads asleep on one condition variable, woken at once to end, each
// then waiting its turn for the mutex. Copying each again where it waits cost the sampler one
// copy per thread (issue 40: 10,000 threads, a third of a CPU over the run), so past a budget
// the copies are put off and a thread that ends first keeps the wait before (reread_pacer.h).
// Whatever the sampler had time for: every thread is in the profile under its own name, with
// the stack it slept in, and no thread's samples carry more CPU than it used.
#include <gtest/gtest.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "../test_util.h"
#include "dump/dump_reader.h"
#include "inprof/profiler.h"

namespace inprof {
namespace {

constexpr int kThreads = 1000;

struct StormDump : internal::DumpVisitor {
  std::map<uint64_t, std::string> names;  // the last name each thread had in the dump
  std::map<uint64_t, uint64_t> cpu_ns;    // the CPU its samples and repeats carry
  std::map<uint64_t, int> copies;         // its samples (not repeats)
  std::map<uint64_t, int> waits;          // of them, copies asleep in a system call
  internal::StatsRecord stats;
  void on_thread_start(const internal::ThreadRecord& r) override { names[r.tid] = r.name; }
  void on_thread_name(const internal::ThreadRecord& r) override { names[r.tid] = r.name; }
  void on_sample(const internal::SampleRecord& s) override {
    ++copies[s.tid];
    if (s.wait) ++waits[s.tid];
    cpu_ns[s.tid] += s.cpu_delta_ns.value_or(1000000);  // a ring's sample: one interval
  }
  void on_sample_repeat(const internal::SampleRepeatRecord& s) override {
    cpu_ns[s.tid] += s.cpu_delta_ns.value_or(0);
  }
  void on_stats(const internal::StatsRecord& s) override { stats = s; }
};

struct Sleeper {
  int index = 0;
  uint64_t tid = 0;
  uint64_t cpu_ns = 0;  // its CPU clock as it ends
};

pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_wake = PTHREAD_COND_INITIALIZER;
int g_asleep = 0;
bool g_end = false;

void* sleep_until_the_storm(void* arg) {
  auto* self = static_cast<Sleeper*>(arg);
  char name[16];
  std::snprintf(name, sizeof(name), "storm-%d", self->index);
  pthread_setname_np(pthread_self(), name);
  self->tid = static_cast<uint64_t>(gettid());
  pthread_mutex_lock(&g_mutex);
  ++g_asleep;
  while (!g_end) pthread_cond_wait(&g_wake, &g_mutex);
  pthread_mutex_unlock(&g_mutex);
  timespec cpu{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  self->cpu_ns = static_cast<uint64_t>(cpu.tv_sec) * 1000000000u + cpu.tv_nsec;
  return nullptr;
}

TEST(WakeStorm, ThreadsWokenAtOnceToEndKeepTheirNamesStacksAndCpu) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("inprof-wake-storm-" + std::to_string(getpid()) + ".inprof"))
                               .string();
  Options options;
  options.output_path = path;
  ASSERT_TRUE(Profiler::start(options));
  std::vector<Sleeper> sleepers(kThreads);
  std::vector<pthread_t> threads(kThreads);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 << 10);
  for (int i = 0; i < kThreads; ++i) {
    sleepers[i].index = i;
    ASSERT_EQ(pthread_create(&threads[i], &attr, sleep_until_the_storm, &sleepers[i]), 0);
  }
  pthread_attr_destroy(&attr);
  for (;;) {
    pthread_mutex_lock(&g_mutex);
    const int asleep = g_asleep;
    pthread_mutex_unlock(&g_mutex);
    if (asleep == kThreads) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Long enough for the sampler's first copy of each (where it sleeps) under a loaded machine.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  pthread_mutex_lock(&g_mutex);
  g_end = true;
  pthread_cond_broadcast(&g_wake);
  pthread_mutex_unlock(&g_mutex);
  for (pthread_t thread : threads) pthread_join(thread, nullptr);
  ASSERT_TRUE(Profiler::stop());

  StormDump dump;
  ASSERT_TRUE(internal::read_dump_file(path, dump).ok);
  std::filesystem::remove(path);
  int unnamed = 0, without_sleep = 0, over_charged = 0;
  for (const Sleeper& s : sleepers) {
    char want[16];
    std::snprintf(want, sizeof(want), "storm-%d", s.index);
    if (dump.names[s.tid] != want && ++unnamed <= 3) {
      ADD_FAILURE() << "thread " << s.tid << " named '" << dump.names[s.tid] << "'";
    }
    if (dump.waits[s.tid] == 0) ++without_sleep;
    // A sample taken without a CPU time of its own stands for an interval: one at most.
    if (dump.cpu_ns[s.tid] > s.cpu_ns + 1000000 && ++over_charged <= 3) {
      ADD_FAILURE() << "thread " << s.tid << " carries " << dump.cpu_ns[s.tid] << " ns of CPU for "
                    << s.cpu_ns << " ns used";
    }
  }
  EXPECT_EQ(unnamed, 0);
  EXPECT_EQ(without_sleep, 0) << "threads with no stack of where they slept";
  EXPECT_EQ(over_charged, 0);
  EXPECT_LE(dump.stats.sleep_stacks_unread, static_cast<uint64_t>(kThreads));
  std::printf("%d threads: %llu ended before their last wait was read\n", kThreads,
              static_cast<unsigned long long>(dump.stats.sleep_stacks_unread));
}

}  // namespace
}  // namespace inprof
