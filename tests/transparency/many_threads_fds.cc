// Item: no resources that grow with the program's threads. With the descriptor limit at 1024,
// the program counts the descriptors open in it, then starts 900 threads that mostly sleep (and
// run a little now and then, so that the profiler looks at each), and counts again: at most 9
// more: the /proc file a profiler may have in hand, and the kernel's sampling rings of the threads
// busy at the moment (at most 8, whatever the number of threads). One per thread would have taken
// 900 of its 1024.
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "transparency.h"

namespace {

// Descriptors open in the process, the fewest seen over half a second: a profiler may hold one
// for an instant (reading /proc), which is not one kept per thread.
int fewest_open_descriptors() {
  int fewest = 1 << 30;
  for (int i = 0; i < 50; ++i) {
    DIR* dir = opendir("/proc/self/fd");
    if (dir == nullptr) return -1;
    int n = 0;
    while (readdir(dir) != nullptr) ++n;
    closedir(dir);
    if (n < fewest) fewest = n;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return fewest;
}

}  // namespace

int main() {
  rlimit limit{1024, 1024};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = 1024;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return 2;
  transparency::spin_cpu_ms(20);  // the profiler sees the main thread run
  const int before = fewest_open_descriptors();

  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 900; ++i) {
    threads.emplace_back([&] {
      // 0.2 ms of CPU every 300 ms: 900 threads ask for 0.6 of a CPU in all. (1 ms every
      // 200 ms asked for 4.5 CPUs: on two cores the program starved itself for half a minute.)
      while (!stop.load()) {
        transparency::spin_cpu_us(200);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // each ran ~3 times, sampled
  const int with_threads = fewest_open_descriptors();
  stop.store(true);
  for (auto& t : threads) t.join();
  // The profiler reads /proc one file at a time; with 900 threads on a loaded machine it may
  // always have that one in hand, and a ring for each of at most 8 busy threads. A descriptor per
  // thread would add 900.
  std::fprintf(stderr, "descriptors: %d before, %d with 900 threads\n", before, with_threads);
  std::printf("descriptors open with 900 threads: %s\n",
              with_threads <= before + 9 ? "as many as without, give or take the profiler's bound"
                                         : "more");
  return 0;
}
