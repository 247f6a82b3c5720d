// Item: no resources that grow with the program's threads. With the descriptor limit at 1024,
// the program counts how many files it can open, then starts 900 threads that mostly sleep (and
// run a little now and then, so that the profiler looks at each), and counts again: the same
// number, and every descriptor it gets stays below 1024 (where select() can use it).
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "transparency.h"

namespace {

// Opens /dev/null until the limit; closes them all again. Counts, and notes the highest fd.
// A refusal is tried again a few times after a pause: a profiler may hold a descriptor for an
// instant (reading /proc), which is not one kept per thread.
int open_until_full(int* highest) {
  std::vector<int> fds;
  for (int refusals = 0; refusals < 400;) {
    const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      ++refusals;
      std::this_thread::sleep_for(std::chrono::microseconds(1000 + refusals * 37 % 4000));
      continue;
    }
    fds.push_back(fd);
  }
  *highest = 0;
  for (int fd : fds) {
    if (fd > *highest) *highest = fd;
    close(fd);
  }
  return static_cast<int>(fds.size());
}

}  // namespace

int main() {
  rlimit limit{1024, 1024};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = 1024;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return 2;
  transparency::spin_cpu_ms(20);  // the profiler sees the main thread run
  int highest = 0;
  const int before = open_until_full(&highest);

  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 900; ++i) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        transparency::spin_cpu_ms(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // sampled for a while
  const int with_threads = open_until_full(&highest);
  stop.store(true);
  for (auto& t : threads) t.join();
  std::printf("files openable with 900 threads: %s\n",
              with_threads == before ? "as many as without" : "fewer");
  std::printf("highest descriptor: %s\n", highest < 1024 ? "below 1024" : "1024 or above");
  return 0;
}
