// The thread count the sampler asks every 4 ms where the kernel keeps no records: from the link
// count of /proc/self/task where its descriptor is held (a table of the sampler's own), the same
// as /proc/self/status's "Threads:" line, which costs 25 times as much.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "sampling/thread_lister.h"
#include "session/process_info.h"
#include "thread_proc_linux.h"

namespace inprof::internal {
namespace {

uint64_t status_threads() {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen("/proc/self/status", "r"), &std::fclose);
  char line[256];
  while (f && std::fgets(line, sizeof(line), f.get())) {
    if (std::strncmp(line, "Threads:", 8) == 0) return std::strtoull(line + 8, nullptr, 10);
  }
  return 0;
}

TEST(ThreadCountLinux, TheTaskDirectorysLinksCountTheThreadsAsTheStatusDoes) {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::vector<std::thread> sleepers;
  for (int i = 0; i < 20; ++i) {
    sleepers.emplace_back([&] {
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return done; });
    });
  }
  std::optional<uint64_t> by_links, by_lister, expected;
  // On a thread of its own with a table of its own, as the sampler (nothing else starts or ends
  // a thread meanwhile: the sleepers wait for `done`).
  std::thread([&] {
    if (!use_private_descriptor_table(-1)) return;  // a TSan build, or seccomp: status only
    expected = status_threads();
    by_links = thread_count_by_links();
    auto lister = ThreadLister::create();
    for (int i = 0; i < 6; ++i) by_lister = lister->thread_count();
  }).join();
  {
    std::lock_guard lock(mutex);
    done = true;
  }
  cv.notify_all();
  for (auto& t : sleepers) t.join();
  if (!expected) GTEST_SKIP() << "no descriptor table of the thread's own here";
  EXPECT_GE(*expected, 22u);
  EXPECT_EQ(by_links, expected);
  EXPECT_EQ(by_lister, expected);
}

}  // namespace
}  // namespace inprof::internal
