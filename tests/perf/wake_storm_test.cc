// A wake storm: a thousand threads asleep on one condition variable, woken at once to end, each
// then waiting its turn for the mutex. Copying each again where it waits cost the sampler one
// copy per thread (issue 40: 10,000 threads, a third of a CPU over the run), so past a budget
// the copies are put off and a thread that ends first keeps the wait before (reread_pacer.h).
// Whatever the sampler had time for: every thread is in the profile under its own name, with
// the stack it slept in, and their samples carry no more CPU than they used.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
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
  std::map<uint64_t, std::string> trail;  // each thread's records, for a failure's message
  void note(uint64_t tid, const char* kind, uint64_t time_ns, std::optional<uint64_t> cpu,
            uint32_t flags) {
    std::string& t = trail[tid];
    if (t.size() > 2000) return;
    t += std::string(" ") + kind + "@" + std::to_string(time_ns / 1000) +
         "us:cpu=" + (cpu ? std::to_string(*cpu) : "none") + ",flags=" + std::to_string(flags);
  }
  void on_thread_start(const internal::ThreadRecord& r) override { names[r.tid] = r.name; }
  void on_thread_name(const internal::ThreadRecord& r) override { names[r.tid] = r.name; }
  void on_sample(const internal::SampleRecord& s) override {
    ++copies[s.tid];
    if (s.wait) ++waits[s.tid];
    cpu_ns[s.tid] += s.cpu_delta_ns.value_or(1000000);  // a ring's sample: one interval
    note(s.tid, "sample", s.time_ns, s.cpu_delta_ns, s.flags);
  }
  void on_sample_repeat(const internal::SampleRepeatRecord& s) override {
    cpu_ns[s.tid] += s.cpu_delta_ns.value_or(0);
    note(s.tid, "repeat", s.time_ns, s.cpu_delta_ns, 0);
  }
  void on_stats(const internal::StatsRecord& s) override { stats = s; }
};

struct Sleeper {
  int index = 0;
  uint64_t tid = 0;
};

uint64_t process_cpu_ns() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto us = [](const timeval& t) { return uint64_t(t.tv_sec) * 1000000 + t.tv_usec; };
  return (us(usage.ru_utime) + us(usage.ru_stime)) * 1000;
}

uint64_t own_cpu_ns() {
  timespec cpu{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  return static_cast<uint64_t>(cpu.tv_sec) * 1000000000u + cpu.tv_nsec;
}

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
  return nullptr;
}

TEST(WakeStorm, ThreadsWokenAtOnceToEndKeepTheirNamesStacksAndCpu) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("inprof-wake-storm-" + std::to_string(getpid()) + ".inprof"))
                               .string();
  Options options;
  options.output_path = path;
  ASSERT_TRUE(Profiler::start(options));
  const uint64_t process_before = process_cpu_ns(), main_before = own_cpu_ns();
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
  // What the sleepers used, their ends in the kernel included (a thread's clock read by itself
  // misses its exit, which 1,000 threads ending at once can make milliseconds long), and more:
  // the profiler's threads too.
  const uint64_t sleepers_at_most =
      process_cpu_ns() - process_before - (own_cpu_ns() - main_before);
  ASSERT_TRUE(Profiler::stop());

  StormDump dump;
  ASSERT_TRUE(internal::read_dump_file(path, dump).ok);
  std::filesystem::remove(path);
  int unnamed = 0, without_sleep = 0;
  uint64_t carried = 0, most = 0, most_tid = 0;
  for (const Sleeper& s : sleepers) {
    char want[16];
    std::snprintf(want, sizeof(want), "storm-%d", s.index);
    if (dump.names[s.tid] != want && ++unnamed <= 3) {
      ADD_FAILURE() << "thread " << s.tid << " named '" << dump.names[s.tid] << "'";
    }
    if (dump.waits[s.tid] == 0) ++without_sleep;
    carried += dump.cpu_ns[s.tid];
    if (dump.cpu_ns[s.tid] > most) most = dump.cpu_ns[s.tid], most_tid = s.tid;
  }
  EXPECT_EQ(unnamed, 0);
  EXPECT_EQ(without_sleep, 0) << "threads with no stack of where they slept";
  // (A sample taken without a CPU time of its own stands for an interval.)
  EXPECT_LE(carried, sleepers_at_most + 1000000)
      << "most carried by one: thread " << most_tid << ":" << dump.trail[most_tid];
  EXPECT_LE(dump.stats.sleep_stacks_unread, static_cast<uint64_t>(kThreads));
  std::printf(
      "%d threads: %.1f ms carried of at most %.1f; %llu ended before their last wait "
      "was read\n",
      kThreads, carried / 1e6, sleepers_at_most / 1e6,
      static_cast<unsigned long long>(dump.stats.sleep_stacks_unread));
}

}  // namespace
}  // namespace inprof
