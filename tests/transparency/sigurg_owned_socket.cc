// Item (issue 39): SIGURG is the program's, and ignored by default. The program makes a TCP
// connection over 127.0.0.1, makes itself the owner of the receiving end (F_SETOWN getpid()), so
// that every urgent byte raises SIGURG at the process, and a thread sends one (MSG_OOB) every
// 20 ms while the main thread waits in poll(), nanosleep() and epoll_wait() with timeouts and two
// threads compute beside them (sampled by rings or timers). Unprofiled, SIGURG's default action
// is to ignore it: none of the waits may fail with EINTR.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "transparency.h"

namespace {

constexpr int kUrgent = 25;

}  // namespace

int main() {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (listener < 0 || bind(listener, (sockaddr*)&addr, sizeof(addr)) != 0 ||
      listen(listener, 1) != 0 || getsockname(listener, (sockaddr*)&addr, &len) != 0) {
    std::printf("no loopback TCP\n");
    return 0;
  }
  const int sender = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(sender, (sockaddr*)&addr, sizeof(addr)) != 0) return 2;
  const int receiver = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  if (receiver < 0) return 2;
  if (fcntl(receiver, F_SETOWN, getpid()) != 0) return 2;

  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (int i = 0; i < 2; ++i) {
    busy.emplace_back([&] {
      while (!stop.load()) transparency::spin_cpu_ms(5);
    });
  }
  std::atomic<int> sent{0};
  std::atomic<bool> sending_done{false};
  std::thread urgent([&] {
    for (int i = 0; i < kUrgent; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const char byte = char('A' + i % 26);
      if (send(sender, &byte, 1, MSG_OOB) == 1) sent.fetch_add(1);
    }
    sending_done.store(true);
  });

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return 2;
  const int epfd = epoll_create1(EPOLL_CLOEXEC);
  int eintr = 0, waits = 0;
  while (!sending_done.load()) {
    pollfd p = {pipe_fds[0], POLLIN, 0};
    if (poll(&p, 1, 15) < 0 && errno == EINTR) ++eintr;
    timespec t{0, 10 * 1000 * 1000};
    if (nanosleep(&t, nullptr) != 0 && errno == EINTR) ++eintr;
    epoll_event e;
    if (epoll_wait(epfd, &e, 1, 15) < 0 && errno == EINTR) ++eintr;
    waits += 3;
  }
  urgent.join();
  stop.store(true);
  for (auto& t : busy) t.join();

  struct sigaction now = {};
  sigaction(SIGURG, nullptr, &now);
  std::printf("urgent bytes sent: %d\n", sent.load());
  std::printf("waits failed with EINTR: %d\n", eintr);
  std::printf("waits made: %s\n", waits > 0 ? "some" : "none");
  // On stderr only: the profiler's sampling signal is SIGURG by design (its handler is there);
  // what the program must not see is the EINTRs.
  std::fprintf(stderr, "SIGURG disposition: %s\n",
               (now.sa_flags & SA_SIGINFO) ? "a handler"
               : now.sa_handler == SIG_DFL ? "default"
               : now.sa_handler == SIG_IGN ? "ignored"
                                           : "a handler");
  return 0;
}
