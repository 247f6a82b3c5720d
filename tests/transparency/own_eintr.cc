// Item: the program's own EINTR is never swallowed. Workers sleep in pause(), poll(5 s),
// nanosleep(5 s), sigsuspend and epoll_wait(5 s) while busy before and after (so the profiler
// samples them); the main thread interrupts each with its own SIGUSR1, whose handler runs for a
// while (a few ms of CPU, during which the profiler samples it too). Each call must fail with
// EINTR, promptly, exactly as unprofiled.
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "transparency.h"

namespace {

std::atomic<int> handled{0};

void on_usr1(int) {
  transparency::spin_cpu_ms(3);  // the profiler's own timer fires in here
  handled.fetch_add(1);
}

struct Case {
  const char* name;
  std::function<int()> call;  // returns -1 with errno, like the call
};

}  // namespace

int main() {
  struct sigaction sa = {};
  sa.sa_handler = on_usr1;  // no SA_RESTART: the calls below would fail with EINTR anyway
  sigaction(SIGUSR1, &sa, nullptr);
  const int epfd = epoll_create1(EPOLL_CLOEXEC);
  std::vector<Case> cases = {
      {"pause", [] { return pause(); }},
      {"poll", [] { return poll(nullptr, 0, 5000); }},
      {"nanosleep",
       [] {
         timespec t{5, 0};
         return nanosleep(&t, nullptr);
       }},
      {"sigsuspend",
       [] {
         sigset_t none;
         sigemptyset(&none);
         return sigsuspend(&none);
       }},
      {"epoll_wait",
       [epfd] {
         epoll_event e;
         return epoll_wait(epfd, &e, 1, 5000);
       }},
  };
  for (int round = 0; round < 3; ++round) {
    for (const Case& c : cases) {
      std::atomic<bool> waiting{false};
      int result = 0, error = 0;
      std::atomic<uint64_t> took_ns{0};
      std::thread worker([&] {
        transparency::spin_cpu_ms(5);  // running: the profiler gives it a timer
        waiting.store(true);
        const uint64_t start = transparency::now_ns();
        result = c.call();
        error = errno;
        took_ns = transparency::now_ns() - start;
        transparency::spin_cpu_ms(2);
      });
      while (!waiting.load()) std::this_thread::yield();
      // Let it fall asleep in the call, then interrupt it; again until it wakes (a signal sent
      // just before it entered the call would be handled before, not in, the call).
      for (int tries = 0; tries < 100 && took_ns == 0; ++tries) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        pthread_kill(worker.native_handle(), SIGUSR1);
      }
      worker.join();
      const bool prompt = took_ns.load() < 4000000000u;
      std::printf("round %d %s: %s%s\n", round, c.name,
                  result == -1 ? strerrorname_np(error) : "returned",
                  prompt ? "" : " (not interrupted)");
    }
  }
  std::printf("handled: %s\n", handled.load() >= 15 ? "every signal" : "some lost");
  return 0;
}
