// Item 14: a forked child's own session stops without waiting for signal handlers that were
// running on the parent's other threads at fork() (they do not exist in the child). The parent
// profiles itself at 10 kHz with two busy threads (sampled by their own timers, whose handlers
// are what a fork can catch in flight) and forks CHILDREN children one after another; each
// starts and stops a session of its own. A child whose stop() took a second or more waited out
// the teardown's give-up time: it exits 1. Prints how many did. Then: a child forked during a
// session does not hold the dump's path.
//   fork_child_stop DUMP_DIR [CHILDREN]
#include <inprof/profiler.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string dir = argv[1];
  const int children = argc > 2 ? std::atoi(argv[2]) : 100;
  inprof::Options options;
  options.interval = std::chrono::microseconds(100);
  options.output_path = dir + "/parent.inprof";
  if (!inprof::Profiler::start(options)) return 3;
  std::atomic<bool> done{false};
  auto spin = [&done] {
    volatile unsigned sink = 0;
    while (!done.load(std::memory_order_relaxed)) sink = sink + 1;
  };
  std::thread a(spin), b(spin);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // long enough to be seen busy
  int slow = 0, failed = 0;
  for (int i = 0; i < children; ++i) {
    const pid_t pid = fork();
    if (pid < 0) return 4;
    if (pid == 0) {
      inprof::Options own = options;
      own.output_path = dir + "/child-" + std::to_string(i) + ".inprof";
      if (!inprof::Profiler::start(own)) _exit(10);
      const auto begin = std::chrono::steady_clock::now();
      const bool stopped = inprof::Profiler::stop().ok();
      const auto took = std::chrono::steady_clock::now() - begin;
      unlink(own.output_path.c_str());
      _exit(!stopped ? 11 : took >= std::chrono::seconds(1) ? 1 : 0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 5;
    if (WEXITSTATUS(status) == 1) ++slow;
    if (WEXITSTATUS(status) > 1) ++failed;
  }
  done = true;
  a.join();
  b.join();
  if (!inprof::Profiler::stop()) return 6;
  std::printf("children: %d, stop() failed: %d, stop() waited out the 1 s give-up: %d\n", children,
              failed, slow);

  // A child forked during a session keeps a copy of the dump's descriptor but must not hold its
  // path: the parent's next session on the same path, while that child lives, writes the path
  // itself, not PATH-PID.
  if (!inprof::Profiler::start(options)) return 7;
  int go[2];
  if (pipe(go) != 0) return 8;
  const pid_t waiter = fork();
  if (waiter < 0) return 9;
  if (waiter == 0) {
    close(go[1]);
    char byte;
    _exit(read(go[0], &byte, 1) < 0 ? 1 : 0);  // lives until the parent closes the pipe
  }
  close(go[0]);
  if (!inprof::Profiler::stop() || !inprof::Profiler::start(options)) return 10;
  const std::string moved = dir + "/parent-" + std::to_string(getpid()) + ".inprof";
  const bool kept_path = access(moved.c_str(), F_OK) != 0;
  if (!inprof::Profiler::stop()) return 11;
  close(go[1]);
  int status = 0;
  if (waitpid(waiter, &status, 0) != waiter) return 12;
  std::printf("a session started beside a forked child kept its path: %s\n",
              kept_path ? "yes" : "no");
  return slow != 0 || failed != 0 || !kept_path;
}
