// Threads in blocking system calls while they are sampled. The program must not be able to tell:
// no call may fail with EINTR and no timed wait may end early. (Linux never restarts poll,
// nanosleep, clock_nanosleep, a timed futex wait, a socket wait under SO_RCVTIMEO, semtimedop,
// epoll_pwait2 or sigsuspend after a signal handler ran, SA_RESTART or not, so any sampling
// signal that reaches a thread sleeping in one of them shows up here; raw syscall(2) included:
// nothing is wrapped.)
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "torture.h"

namespace {

struct CallStats {
  const char* name;
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> eintr{0};
  std::atomic<uint64_t> short_waits{0};  // returned before the time asked for
  std::atomic<uint64_t> other_errors{0};
  std::atomic<uint64_t> shortest_ns{UINT64_MAX};  // of the short ones
  // A documented limit rather than a failure: reported, not fatal.
  const char* known_limit = nullptr;

  explicit CallStats(const char* n, const char* limit = nullptr) : name(n), known_limit(limit) {}
  void timed(uint64_t asked_ns, uint64_t elapsed_ns) {
    if (elapsed_ns >= asked_ns) return;
    short_waits.fetch_add(1);
    uint64_t cur = shortest_ns.load();
    while (elapsed_ns < cur && !shortest_ns.compare_exchange_weak(cur, elapsed_ns)) {
    }
  }
};

constexpr uint64_t kWaitNs = 2000000;  // 2 ms per timed wait
constexpr timespec kWaitTs = {0, static_cast<long>(kWaitNs)};

// CPU between two calls, so that the sampler sees the thread run and interrupts it rather than
// repeating its last stack: alternately a few microseconds and a few hundred (over one interval).
void busy_a_little(uint64_t seed) { (void)torture::mix(seed, seed % 2 ? 3000 : 100000); }

long futex_wait(std::atomic<uint32_t>* word, uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT | FUTEX_PRIVATE_FLAG,
                 value, timeout, nullptr, 0);
}

}  // namespace

TORTURE_SCENARIO(blocking_syscalls) {
  CallStats pipe_read("read(pipe)"), poll_stats("poll"), futex_timed("futex(FUTEX_WAIT, 2ms)"),
      futex_untimed("futex(FUTEX_WAIT, no timeout)"), cv_stats("condition_variable::wait_for"),
      nano("nanosleep"), clock_nano("clock_nanosleep"), sleep_for("this_thread::sleep_for"),
      sem_stats("sem_timedwait"), epoll_stats("epoll_wait"), select_stats("select"),
      recv_stats("recv(SO_RCVTIMEO 2ms)"), semop_stats("semtimedop"), pwait2_stats("epoll_pwait2"),
      suspend_stats("sigsuspend (own SIGUSR1)");
  CallStats* all[] = {&pipe_read,    &poll_stats, &futex_timed, &futex_untimed, &cv_stats,
                      &nano,         &clock_nano, &sleep_for,   &sem_stats,     &epoll_stats,
                      &select_stats, &recv_stats, &semop_stats, &pwait2_stats,  &suspend_stats};

  int data_pipe[2], idle_pipe[2];
  TT_CHECK(pipe2(data_pipe, O_CLOEXEC) == 0 && pipe2(idle_pipe, O_CLOEXEC) == 0, "pipe");
  std::atomic<bool> done{false};
  // The sigsuspend worker and its partner (below).
  std::atomic<pthread_t> suspender{};
  std::atomic<bool> ready{false};
  std::atomic<uint32_t> futex_word{0};  // never changes: timed waits must time out
  std::atomic<uint32_t> wake_word{0};   // bumped by the waker for the untimed waiter
  std::atomic<uint64_t> bytes_written{0}, bytes_read{0}, wakes{0};

  torture::start(ctx);
  torture::Deadline deadline(ctx.seconds);
  std::vector<std::thread> threads;

  // A writer feeds the pipe slowly; the reader blocks in read() between bytes.
  threads.emplace_back([&] {
    while (!deadline.passed()) {
      char c = 'x';
      TT_CHECK(write(data_pipe[1], &c, 1) == 1, "write: %s", strerror(errno));
      bytes_written.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(1500));
    }
    close(data_pipe[1]);
  });
  threads.emplace_back([&] {
    for (;;) {
      char buf[64];
      pipe_read.calls.fetch_add(1);
      ssize_t n = read(data_pipe[0], buf, sizeof(buf));
      if (n == 0) break;
      if (n < 0) {
        (errno == EINTR ? pipe_read.eintr : pipe_read.other_errors).fetch_add(1);
        continue;
      }
      bytes_read.fetch_add(static_cast<uint64_t>(n));
      busy_a_little(n);
    }
  });
  threads.emplace_back([&] {
    while (!deadline.passed()) {
      pollfd p{idle_pipe[0], POLLIN, 0};
      const uint64_t t0 = torture::now_ns();
      int r = poll(&p, 1, static_cast<int>(kWaitNs / 1000000));
      const uint64_t t1 = torture::now_ns();
      poll_stats.calls.fetch_add(1);
      if (r < 0)
        (errno == EINTR ? poll_stats.eintr : poll_stats.other_errors).fetch_add(1);
      else if (r > 0)
        poll_stats.other_errors.fetch_add(1);
      else
        poll_stats.timed(kWaitNs, t1 - t0);
      busy_a_little(t0);
    }
  });
  threads.emplace_back([&] {
    while (!deadline.passed()) {
      const uint64_t t0 = torture::now_ns();
      long r = futex_wait(&futex_word, 0, &kWaitTs);
      const int err = errno;
      const uint64_t t1 = torture::now_ns();
      futex_timed.calls.fetch_add(1);
      if (r == 0)
        futex_timed.timed(kWaitNs, t1 - t0);  // a wake nobody sent
      else if (err == EINTR)
        futex_timed.eintr.fetch_add(1);
      else if (err == ETIMEDOUT)
        futex_timed.timed(kWaitNs, t1 - t0);
      else
        futex_timed.other_errors.fetch_add(1);
      busy_a_little(t0);
    }
  });
  // Untimed futex wait, woken by a partner every 1 ms: restartable, so it must never see EINTR.
  threads.emplace_back([&] {
    uint32_t seen = 0;
    while (!done.load()) {
      futex_untimed.calls.fetch_add(1);
      long r = futex_wait(&wake_word, seen, nullptr);
      if (r != 0 && errno == EINTR)
        futex_untimed.eintr.fetch_add(1);
      else if (r != 0 && errno != EAGAIN)
        futex_untimed.other_errors.fetch_add(1);
      seen = wake_word.load();
      busy_a_little(seen);
    }
  });
  threads.emplace_back([&] {
    while (!deadline.passed()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      wake_word.fetch_add(1);
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(&wake_word), FUTEX_WAKE | FUTEX_PRIVATE_FLAG,
              1, nullptr, nullptr, 0);
      wakes.fetch_add(1);
    }
    done.store(true);
    wake_word.fetch_add(1);
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&wake_word), FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1,
            nullptr, nullptr, 0);
  });
  threads.emplace_back([&] {
    std::mutex m;
    std::condition_variable cv;
    std::unique_lock lock(m);
    while (!deadline.passed()) {
      const uint64_t t0 = torture::now_ns();
      bool woke = cv.wait_for(lock, std::chrono::nanoseconds(kWaitNs), [] { return false; });
      const uint64_t t1 = torture::now_ns();
      cv_stats.calls.fetch_add(1);
      if (woke) cv_stats.other_errors.fetch_add(1);
      cv_stats.timed(kWaitNs, t1 - t0);
      busy_a_little(t0);
    }
  });
  threads.emplace_back([&] {
    while (!deadline.passed()) {
      timespec rem{};
      const uint64_t t0 = torture::now_ns();
      int r = nanosleep(&kWaitTs, &rem);
      const int err = errno;
      const uint64_t t1 = torture::now_ns();
      nano.calls.fetch_add(1);
      if (r != 0) (err == EINTR ? nano.eintr : nano.other_errors).fetch_add(1);
      nano.timed(kWaitNs, t1 - t0);
      busy_a_little(t0);
    }
  });
  threads.emplace_back([&] {
    while (!deadline.passed()) {
      const uint64_t t0 = torture::now_ns();
      int r = clock_nanosleep(CLOCK_MONOTONIC, 0, &kWaitTs, nullptr);  // returns the error
      const uint64_t t1 = torture::now_ns();
      clock_nano.calls.fetch_add(1);
      if (r != 0) (r == EINTR ? clock_nano.eintr : clock_nano.other_errors).fetch_add(1);
      clock_nano.timed(kWaitNs, t1 - t0);
      busy_a_little(t0);
    }
  });
  threads.emplace_back([&] {
    while (!deadline.passed()) {
      const uint64_t t0 = torture::now_ns();
      std::this_thread::sleep_for(std::chrono::nanoseconds(kWaitNs));
      const uint64_t t1 = torture::now_ns();
      sleep_for.calls.fetch_add(1);
      sleep_for.timed(kWaitNs, t1 - t0);
      busy_a_little(t0);
    }
  });
  // POSIX semaphore that nobody posts: every timed wait must time out, after the full time.
  threads.emplace_back([&] {
    sem_t sem;
    sem_init(&sem, 0, 0);
    while (!deadline.passed()) {
      // t0 before the deadline is computed: a preemption in between must not look like a
      // shortened wait.
      const uint64_t t0 = torture::now_ns();
      timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += static_cast<long>(kWaitNs);
      if (until.tv_nsec >= 1000000000) {
        until.tv_nsec -= 1000000000;
        ++until.tv_sec;
      }
      int r = sem_timedwait(&sem, &until);
      const int err = errno;
      const uint64_t t1 = torture::now_ns();
      sem_stats.calls.fetch_add(1);
      if (r == 0)
        sem_stats.other_errors.fetch_add(1);
      else if (err == EINTR)
        sem_stats.eintr.fetch_add(1);
      else if (err != ETIMEDOUT)
        sem_stats.other_errors.fetch_add(1);
      // The deadline is on the realtime clock; allow for the two clocks' reading skew.
      else
        sem_stats.timed(kWaitNs - 20000, t1 - t0);
      busy_a_little(t0);
    }
    sem_destroy(&sem);
  });
  threads.emplace_back([&] {
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    TT_CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, idle_pipe[0], &ev) == 0, "epoll_ctl");
    while (!deadline.passed()) {
      epoll_event out;
      const uint64_t t0 = torture::now_ns();
      int r = epoll_wait(ep, &out, 1, static_cast<int>(kWaitNs / 1000000));
      const int err = errno;
      const uint64_t t1 = torture::now_ns();
      epoll_stats.calls.fetch_add(1);
      if (r < 0)
        (err == EINTR ? epoll_stats.eintr : epoll_stats.other_errors).fetch_add(1);
      else if (r > 0)
        epoll_stats.other_errors.fetch_add(1);
      else
        epoll_stats.timed(kWaitNs, t1 - t0);
      busy_a_little(t0);
    }
    close(ep);
  });
  threads.emplace_back([&] {
    while (!deadline.passed()) {
      fd_set fds;
      FD_ZERO(&fds);
      FD_SET(idle_pipe[0], &fds);
      timeval tv{0, static_cast<long>(kWaitNs / 1000)};
      const uint64_t t0 = torture::now_ns();
      int r = select(idle_pipe[0] + 1, &fds, nullptr, nullptr, &tv);
      const int err = errno;
      const uint64_t t1 = torture::now_ns();
      select_stats.calls.fetch_add(1);
      if (r < 0)
        (err == EINTR ? select_stats.eintr : select_stats.other_errors).fetch_add(1);
      else if (r > 0)
        select_stats.other_errors.fetch_add(1);
      else
        select_stats.timed(kWaitNs, t1 - t0);
      busy_a_little(t0);
    }
  });
  // A datagram socket nobody writes to: every receive times out (EAGAIN) after the full time.
  threads.emplace_back([&] {
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    timeval tv{0, static_cast<long>(kWaitNs / 1000)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    while (!deadline.passed()) {
      char buf[8];
      const uint64_t t0 = torture::now_ns();
      const ssize_t r = recv(fd, buf, sizeof(buf), 0);
      const int err = errno;
      const uint64_t t1 = torture::now_ns();
      recv_stats.calls.fetch_add(1);
      if (r < 0 && err == EINTR)
        recv_stats.eintr.fetch_add(1);
      else if (r >= 0 || (err != EAGAIN && err != EWOULDBLOCK))
        recv_stats.other_errors.fetch_add(1);
      else
        recv_stats.timed(kWaitNs - 1000000, t1 - t0);  // SO_RCVTIMEO rounds to jiffies
      busy_a_little(t0);
    }
    close(fd);
  });
  // A System V semaphore nobody posts.
  threads.emplace_back([&] {
    const int id = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
    TT_CHECK(id >= 0, "semget: %s", strerror(errno));
    while (!deadline.passed()) {
      sembuf op{0, -1, 0};
      const uint64_t t0 = torture::now_ns();
      const int r = semtimedop(id, &op, 1, &kWaitTs);
      const int err = errno;
      const uint64_t t1 = torture::now_ns();
      semop_stats.calls.fetch_add(1);
      if (r == 0)
        semop_stats.other_errors.fetch_add(1);
      else if (err == EINTR)
        semop_stats.eintr.fetch_add(1);
      else if (err != EAGAIN)
        semop_stats.other_errors.fetch_add(1);
      else
        semop_stats.timed(kWaitNs, t1 - t0);
      busy_a_little(t0);
    }
    semctl(id, 0, IPC_RMID);
  });
  threads.emplace_back([&] {
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    while (!deadline.passed()) {
      epoll_event out;
      const uint64_t t0 = torture::now_ns();
      const long r = syscall(SYS_epoll_pwait2, ep, &out, 1, &kWaitTs, nullptr, 0);
      const int err = errno;
      const uint64_t t1 = torture::now_ns();
      pwait2_stats.calls.fetch_add(1);
      if (r < 0)
        (err == EINTR ? pwait2_stats.eintr : pwait2_stats.other_errors).fetch_add(1);
      else if (r > 0)
        pwait2_stats.other_errors.fetch_add(1);
      else
        pwait2_stats.timed(kWaitNs, t1 - t0);
      busy_a_little(t0);
    }
    close(ep);
  });
  // sigsuspend until the program's own SIGUSR1, sent by a partner after 2 ms: it must return
  // once per signal of the program's, with the handler run once, never earlier.
  static std::atomic<int> handled{0};
  struct sigaction sa = {};
  sa.sa_handler = [](int) { handled.fetch_add(1); };
  sigaction(SIGUSR1, &sa, nullptr);
  threads.emplace_back([&] {
    sigset_t block, none;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &block, nullptr);
    sigemptyset(&none);
    suspender = pthread_self();
    ready = true;
    while (!deadline.passed()) {
      const int before = handled.load();
      const uint64_t t0 = torture::now_ns();
      const int r = sigsuspend(&none);
      const int err = errno;
      const uint64_t t1 = torture::now_ns();
      suspend_stats.calls.fetch_add(1);
      // No timing: the signal may already be pending when it suspends. Any return but for one
      // of the program's signals (the profiler's, say) leaves `handled` as it was.
      (void)t1;
      if (r != -1 || err != EINTR || handled.load() != before + 1)
        suspend_stats.other_errors.fetch_add(1);
      busy_a_little(t0);
    }
    ready = false;
  });
  threads.emplace_back([&] {
    while (!ready.load() && !deadline.passed()) std::this_thread::yield();
    // Each signal 2 ms after the previous one was handled (never before the thread slept).
    int sent = 0;
    while (ready.load()) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(kWaitNs));
      if (handled.load() == sent) {
        ++sent;
        pthread_kill(suspender.load(), SIGUSR1);
      }
    }
  });
  for (auto& t : threads) t.join();
  torture::stop();
  close(data_pipe[0]);
  close(idle_pipe[0]);
  close(idle_pipe[1]);

  bool ok = bytes_read.load() == bytes_written.load();
  std::string summary;
  for (CallStats* s : all) {
    char line[256];
    std::snprintf(
        line, sizeof(line), "  %-32s calls %7llu  EINTR %5llu  short %5llu%s  errors %llu\n",
        s->name, (unsigned long long)s->calls.load(), (unsigned long long)s->eintr.load(),
        (unsigned long long)s->short_waits.load(),
        s->short_waits.load()
            ? (" (shortest " + std::to_string(s->shortest_ns.load() / 1000) + " us)").c_str()
            : "",
        (unsigned long long)s->other_errors.load());
    summary += line;
    if (s->known_limit && s->other_errors.load() == 0 && s->calls.load() > 0) {
      if (s->eintr.load() || s->short_waits.load()) {
        summary += std::string("    (known limit: ") + s->known_limit + ")\n";
      }
      continue;
    }
    if (s->eintr.load() || s->short_waits.load() || s->other_errors.load() ||
        s->calls.load() == 0) {
      ok = false;
    }
  }
  std::printf("%s", summary.c_str());
  TT_CHECK(ok,
           "the profiler was visible to blocking calls (EINTR or waits cut short; see the table "
           "above); pipe bytes written %llu, read %llu",
           (unsigned long long)bytes_written.load(), (unsigned long long)bytes_read.load());
  torture::report(ctx, "no EINTR, no short wait in %llu blocking calls", [&all] {
    unsigned long long n = 0;
    for (CallStats* s : all) n += s->calls.load();
    return n;
  }());
  return 0;
}
