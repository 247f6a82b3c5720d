// Process-level torture: fork and fork+exec storms from several threads while sampling (the
// child inherits no sampler, no lock held by a missing thread, and its own profiler must work),
// and the program ending while profiling: return from main, exit() from another thread, _exit().
#include <inprof/markers.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "torture.h"

extern char** environ;

namespace {

// What a forked child does: work, allocate, sometimes profile itself, then exit with a status
// the parent can predict.
[[noreturn]] void child_main(const torture::Context& ctx, uint64_t n) {
  alarm(20);  // a child that hangs dies with SIGALRM, which the parent reports
  uint64_t v = torture::mix(n, 20000);
  std::vector<std::string> strings;
  for (int i = 0; i < 50; ++i) strings.push_back(std::to_string(v + i));
  int status = static_cast<int>(v % 100);
  if (n % 16 == 0) {
    // A profiler of its own in the child: the parent's session must be fully released.
    inprof::Options o = torture::options(ctx);
    o.output_path = ctx.dump_path + ".child." + std::to_string(getpid());
    inprof::Status s = inprof::Profiler::start(o);
    if (!s) {
      std::fprintf(stderr, "child %d: start: %s\n", getpid(), s.message().c_str());
      _exit(101);
    }
    (void)torture::mix(v, 200000);
    s = inprof::Profiler::stop();
    unlink(o.output_path.c_str());
    if (!s) {
      std::fprintf(stderr, "child %d: stop: %s\n", getpid(), s.message().c_str());
      _exit(102);
    }
  }
  if (n % 2) exit(status);  // atexit handlers and static destructors of a forked child
  _exit(status);
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

}  // namespace

// fork() from three threads at once, children doing real work (and sometimes profiling).
TORTURE_SCENARIO(fork_storm) {
  torture::start(ctx);
  torture::Deadline deadline(ctx.seconds);
  std::atomic<uint64_t> forks{0}, profiled{0};
  // No fork while one of the forking threads is starting or exiting: a thread's start and end
  // are when it allocates most (its first allocations refill an empty per-thread cache; at exit
  // the cache is given back), and an allocator without fork handlers (GCC 12's ASan runtime has
  // none) leaves the child its locks held by that thread, which the child does not have: the
  // child's first allocation of that size hangs. glibc's malloc is fork-safe; what this scenario
  // tests is inprof's own fork handling, not the allocator's. Every forking thread has started
  // before the first fork, and none returns before all three are done forking (inprof's own
  // threads are kept out of the allocator by its fork handler: Session::hold_for_fork).
  constexpr int kForkingThreads = 3;
  std::atomic<int> started{0}, finished{0};
  auto all_reach = [](std::atomic<int>& count) {
    count.fetch_add(1);
    while (count.load() < kForkingThreads) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  };
  auto work = [&](uint64_t base) {
    all_reach(started);
    for (uint64_t i = 0; !deadline.passed(); ++i) {
      const uint64_t n = base + i;
      const pid_t pid = fork();
      TT_CHECK(pid >= 0, "fork: %s", strerror(errno));
      if (pid == 0) child_main(ctx, n);
      int status = 0;
      TT_CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
      const int expected = static_cast<int>(torture::mix(n, 20000) % 100);
      TT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == expected,
               "child %llu: %s, expected exit %d", (unsigned long long)n, describe(status).c_str(),
               expected);
      forks.fetch_add(1);
      if (n % 16 == 0) profiled.fetch_add(1);
      (void)torture::mix(n, 5000);
    }
    all_reach(finished);
  };
  std::thread a(work, 1000000), b(work, 2000000);
  work(0);
  a.join();
  b.join();
  torture::stop();
  TT_CHECK(forks.load() > 0, "no fork");
  torture::report(ctx, "%llu children forked, all exited as expected (%llu profiled themselves)",
                  (unsigned long long)forks.load(), (unsigned long long)profiled.load());
  return 0;
}

// fork()+execv() of this program and posix_spawn() (vfork-style) of /bin/true, from three
// threads.
TORTURE_SCENARIO(fork_exec_storm) {
  torture::start(ctx);
  torture::Deadline deadline(ctx.seconds);
  std::atomic<uint64_t> execs{0}, spawns{0};
  auto work = [&](uint64_t base) {
    for (uint64_t i = 0; !deadline.passed(); ++i) {
      const int expected = static_cast<int>((base + i) % 100);
      const std::string code = std::to_string(expected);
      pid_t pid;
      if (i % 2 == 0) {
        pid = fork();
        TT_CHECK(pid >= 0, "fork: %s", strerror(errno));
        if (pid == 0) {
          char* argv[] = {const_cast<char*>(ctx.self_path.c_str()),
                          const_cast<char*>("--exit-with"), const_cast<char*>(code.c_str()),
                          nullptr};
          execv(argv[0], argv);
          _exit(127);
        }
      } else {
        char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
        TT_CHECK(posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, environ) == 0,
                 "posix_spawn");
      }
      int status = 0;
      TT_CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
      const int want = i % 2 == 0 ? expected : 0;
      TT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == want, "child: %s, expected exit %d",
               describe(status).c_str(), want);
      (i % 2 == 0 ? execs : spawns).fetch_add(1);
    }
  };
  std::thread a(work, 1), b(work, 2);
  work(3);
  a.join();
  b.join();
  torture::stop();
  torture::report(ctx, "%llu fork+exec, %llu posix_spawn, all exit statuses right",
                  (unsigned long long)execs.load(), (unsigned long long)spawns.load());
  return 0;
}

// A child that profiles itself execs from one of its threads while another keeps spinning.
// Threads are interrupted by the sampler's signal (or, when busy, by their own timers): one may
// arrive while the thread is inside execve, and pending signals survive execve into a program
// that has not installed our handler. The default sampling signal must be one whose default
// action is harmless, so the new program runs and exits with its own status
// (INPROF_TORTURE_SIGNAL=27, SIGPROF, gets children killed).
TORTURE_SCENARIO(exec_from_busy_threads) {
  torture::start(ctx);
  torture::Deadline deadline(ctx.seconds);
  uint64_t execs = 0;
  for (uint64_t i = 0; !deadline.passed(); ++i) {
    const int expected = static_cast<int>(i % 100);
    const std::string code = std::to_string(expected);
    const std::string child_dump = ctx.dump_path + ".exec-child." + std::to_string(i);
    const pid_t pid = fork();
    TT_CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
      alarm(20);  // a child that hangs dies with SIGALRM, which the parent reports
      inprof::Options o = torture::options(ctx);
      o.output_path = child_dump;
      if (!inprof::Profiler::start(o)) _exit(101);
      std::atomic<bool> spin{true};
      std::thread spinner;  // every other child: a busy thread, sampled by its own timer
      if (i % 2 == 0) {
        spinner = std::thread([&] {
          uint64_t x = i;
          while (spin.load(std::memory_order_relaxed)) x = torture::mix(x, 1000);
        });
      }
      // Busy (moved to self-sampling) or mostly asleep (signalled by the sampler every tick)
      // for a while, then exec.
      std::thread execer([&] {
        torture::Deadline run(0.01 + 0.001 * static_cast<double>(i % 10));
        uint64_t x = i;
        while (!run.passed()) {
          x = torture::mix(x, 1000);
          if (i % 4 >= 2) usleep(50);
        }
        char* argv[] = {const_cast<char*>(ctx.self_path.c_str()), const_cast<char*>("--exit-with"),
                        const_cast<char*>(code.c_str()), nullptr};
        execv(argv[0], argv);
        _exit(127);
      });
      execer.join();
      _exit(126);  // not reached: execv does not return, and the process image is replaced
    }
    int status = 0;
    TT_CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
    unlink(child_dump.c_str());
    TT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == expected,
             "exec'd child %llu: %s, expected exit %d", (unsigned long long)i,
             describe(status).c_str(), expected);
    ++execs;
  }
  torture::stop();
  TT_CHECK(execs > 0, "no exec");
  torture::report(ctx, "%llu children exec'd from a busy thread, all exit statuses right",
                  (unsigned long long)execs);
  return 0;
}

namespace {

// Workers that are still running (and recording markers) when the process ends.
void start_background_workers(int count) {
  for (int i = 0; i < count; ++i) {
    std::thread([i] {
      for (uint64_t n = 0;; ++n) {
        INPROF_SCOPED_MARKER("exit-worker");
        (void)torture::mix(n + i, 20000);
      }
    }).detach();
  }
}

uint64_t checked_main_work(const torture::Context& ctx) {
  torture::Deadline deadline(ctx.seconds);
  uint64_t rounds = 0;
  while (!deadline.passed()) {
    TT_CHECK(torture::mix(rounds, 10000) == torture::mix(rounds, 10000), "mix not deterministic");
    ++rounds;
  }
  return rounds;
}

}  // namespace

// main() returns with the profiler still running and workers busy: the atexit hook must stop it
// and complete the dump; the status is main's.
TORTURE_SCENARIO(exit_return) {
  torture::start(ctx);
  start_background_workers(2);
  const uint64_t rounds = checked_main_work(ctx);
  torture::report(ctx, "%llu rounds; returning 0 from main while profiling",
                  (unsigned long long)rounds);
  return 0;
}

// exit(3) called from a worker thread while the main thread is blocked in join.
TORTURE_SCENARIO(exit_from_thread) {
  torture::start(ctx);
  start_background_workers(1);
  std::thread exiter([&ctx] {
    const uint64_t rounds = checked_main_work(ctx);
    torture::report(ctx, "%llu rounds; exit(3) from a worker thread while profiling",
                    (unsigned long long)rounds);
    exit(3);
  });
  exiter.join();
  TT_CHECK(false, "exit() returned");
}

// _exit(4): no atexit hook, no stop. The dump must still be readable up to its last flush.
TORTURE_SCENARIO(exit_immediately) {
  torture::start(ctx);
  start_background_workers(2);
  const uint64_t rounds = checked_main_work(ctx);
  torture::report(ctx, "%llu rounds; _exit(4) while profiling", (unsigned long long)rounds);
  _exit(4);
}
