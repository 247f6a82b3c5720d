// The kernel's records of when threads run (platform/linux/thread_activity_linux.h): a thread
// created after the watch starts is reported created, switched on and off, and ended; one asleep
// is reported by no switch at all until it wakes. Skipped where perf events are refused.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "../test_util.h"
#include "session/process_info.h"
#include "thread_activity_linux.h"

namespace inprof::internal {
namespace {

using Kind = ThreadLister::Activity::Kind;

std::vector<ThreadLister::Activity> drained(ThreadActivityLinux& activity) {
  std::vector<ThreadLister::Activity> out;
  activity.drain(
      [](void* context, const ThreadLister::Activity& record) {
        static_cast<std::vector<ThreadLister::Activity>*>(context)->push_back(record);
      },
      &out);
  return out;
}

size_t count(const std::vector<ThreadLister::Activity>& records, Kind kind, uint64_t tid) {
  size_t n = 0;
  for (const auto& r : records) n += r.kind == kind && r.tid == tid;
  return n;
}

void spin_ms(int ms) {
  const uint64_t until = current_thread_cpu_ns() + uint64_t(ms) * 1000000u;
  while (current_thread_cpu_ns() < until) {
  }
}

TEST(ThreadActivity, FollowsAThreadFromItsStartToItsEnd) {
  if (testing::emulator()) GTEST_SKIP() << "qemu-user: no perf events";
  ThreadActivityLinux activity;
  if (!activity.open(current_thread_id())) GTEST_SKIP() << "perf events refused here";
  std::atomic<uint64_t> tid{0};
  std::thread thread([&] {
    tid = current_thread_id();
    spin_ms(2);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    spin_ms(2);
  });
  thread.join();
  const auto records = drained(activity);
  EXPECT_EQ(count(records, Kind::kCreated, tid), 1u);
  EXPECT_GE(count(records, Kind::kOn, tid), 2u);  // at its start, and after its sleep
  EXPECT_GE(count(records, Kind::kOff, tid),
            1u);  // its sleep (none at its end: the events go first)
  EXPECT_EQ(count(records, Kind::kEnded, tid), 1u);
  EXPECT_EQ(count(records, Kind::kLost, 0), 0u);
  for (const auto& r : records) EXPECT_GT(r.time_ns, 0u);
}

TEST(ThreadActivity, ASleepingThreadIsNotReportedUntilItWakes) {
  if (testing::emulator()) GTEST_SKIP() << "qemu-user: no perf events";
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  ThreadActivityLinux activity;
  if (!activity.open(current_thread_id())) GTEST_SKIP() << "perf events refused here";
  std::atomic<uint64_t> tid{0};
  std::thread sleeper([&] {
    tid = current_thread_id();
    char byte;
    (void)!read(pipe_fds[0], &byte, 1);
  });
  while (tid.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Once it has blocked in read() (its switch off recorded), nothing more comes from it.
  bool asleep = false;  // its latest record says it went off a CPU
  for (int i = 0; i < 500 && !asleep; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    for (const auto& r : drained(activity)) {
      if (r.tid == tid && (r.kind == Kind::kOn || r.kind == Kind::kOff))
        asleep = r.kind == Kind::kOff;
    }
  }
  ASSERT_TRUE(asleep);
  (void)drained(activity);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(count(drained(activity), Kind::kOn, tid), 0u);
  ASSERT_EQ(write(pipe_fds[1], "x", 1), 1);
  sleeper.join();
  EXPECT_GE(count(drained(activity), Kind::kOn, tid), 1u);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

// A process the program forks is not followed (inherit_thread): its switches never arrive.
TEST(ThreadActivity, ForkedProcessesAreNotFollowed) {
  if (testing::emulator()) GTEST_SKIP() << "qemu-user: no perf events";
  ThreadActivityLinux activity;
  if (!activity.open(current_thread_id())) GTEST_SKIP() << "perf events refused here";
  const pid_t child = fork();
  if (child == 0) {
    spin_ms(5);
    usleep(10000);
    spin_ms(5);
    _exit(0);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  const auto records = drained(activity);
  EXPECT_EQ(count(records, Kind::kOn, uint64_t(child)), 0u);
  EXPECT_EQ(count(records, Kind::kCreated, uint64_t(child)), 0u);
}

}  // namespace
}  // namespace inprof::internal
