// Item: a thread that blocks every signal and waits for them in sigwait/sigtimedwait/signalfd
// must never receive the profiler's signal. The program blocks all signals, runs busy workers
// (which inherit the mask) and waits, three ways, for a SIGTERM it sends itself after a while.
// It prints every signal it received: only SIGTERM, three times. Then, as a server between
// requests, the main thread runs in short bursts between waits in sigtimedwait and in sigsuspend
// (inside either, its status shows the waited-for signals unblocked, not the mask it returns to):
// every wait ends with the program's own SIGUSR1.
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> stop{false};

// Busy until `clock` has advanced `ns`.
void spin_for_ns(clockid_t clock, int64_t ns) {
  timespec start, now;
  clock_gettime(clock, &start);
  volatile uint64_t x = 0;
  do {
    for (int i = 0; i < 100; ++i) x = x + i;
    clock_gettime(clock, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000000000 + (now.tv_nsec - start.tv_nsec) < ns);
}

void spin_for_ms(int ms) { spin_for_ns(CLOCK_MONOTONIC, int64_t{ms} * 1000000); }

// Busy, then SIGTERM to the process after `ms`.
void send_term_after(int ms) {
  std::thread([ms] {
    spin_for_ms(ms);
    kill(getpid(), SIGTERM);
  }).detach();
}

std::atomic<int> handled{0};
void on_usr1(int) { handled.fetch_add(1); }

// Sends SIGUSR1 to thread `tid` `count` times, each once the last was taken (`taken()` counts
// them), ~1 ms apart: the waiting thread runs a burst after each.
template <typename Taken>
std::thread sender(pid_t tid, int count, Taken taken) {
  return std::thread([tid, count, taken] {
    for (int i = 0; i < count; ++i) {
      while (taken() < i) std::this_thread::yield();
      timespec nap{0, 1000000};
      nanosleep(&nap, nullptr);
      syscall(SYS_tgkill, getpid(), tid, SIGUSR1);
    }
  });
}

void spin_for_us(int us) { spin_for_ns(CLOCK_THREAD_CPUTIME_ID, int64_t{us} * 1000); }

const char* name(int sig) {
  const char* n = sigabbrev_np(sig);
  return n ? n : "?";
}

}  // namespace

int main() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::vector<std::thread> workers;
  for (int i = 0; i < 3; ++i) {
    workers.emplace_back([] {
      while (!stop.load()) spin_for_ms(5);
    });
  }
  spin_for_ms(100);  // the main thread is busy first, as a server starting up

  send_term_after(300);
  int sig = 0;
  int r = sigwait(&all, &sig);
  std::printf("sigwait: %d SIG%s\n", r, name(sig));

  send_term_after(300);
  siginfo_t info;
  timespec timeout{10, 0};
  sig = sigtimedwait(&all, &info, &timeout);
  std::printf("sigtimedwait: SIG%s\n", sig > 0 ? name(sig) : strerror(errno));

  send_term_after(300);
  int fd = signalfd(-1, &all, SFD_CLOEXEC);
  signalfd_siginfo si;
  ssize_t n = read(fd, &si, sizeof(si));
  std::printf("signalfd: %zd SIG%s\n", n,
              n == sizeof(si) ? name(static_cast<int>(si.ssi_signo)) : "-");
  close(fd);

  // Bursts of 300 us of CPU between waits in sigtimedwait (nothing blocked while inside).
  constexpr int kBursts = 150;
  const auto main_tid = static_cast<pid_t>(syscall(SYS_gettid));
  std::atomic<int> taken{0};
  int others = 0;
  std::thread waker = sender(main_tid, kBursts, [&taken] { return taken.load(); });
  for (int i = 0; i < kBursts;) {
    timespec wait{10, 0};
    sig = sigtimedwait(&all, &info, &wait);
    if (sig == SIGUSR1) {
      taken.store(++i);
    } else {
      ++others;
      if (sig != SIGURG) break;  // (the profiler's, counted below; any other ends the loop)
    }
    spin_for_us(300);
  }
  waker.join();
  std::printf("sigtimedwait bursts: %d SIGUSR1, %d other\n", taken.load(), others);

  // The same in sigsuspend, which lets every signal through while it waits.
  struct sigaction usr1 = {};
  usr1.sa_handler = on_usr1;
  sigaction(SIGUSR1, &usr1, nullptr);
  sigset_t none;
  sigemptyset(&none);
  int early = 0;
  waker = sender(main_tid, kBursts, [] { return handled.load(); });
  while (handled.load() < kBursts) {
    const int before = handled.load();
    sigsuspend(&none);
    if (handled.load() == before) ++early;  // woken by a signal not the program's
    spin_for_us(300);
  }
  waker.join();
  std::printf("sigsuspend bursts: %d SIGUSR1, %d woken otherwise\n", handled.load(), early);

  stop.store(true);
  for (auto& t : workers) t.join();
  return 0;
}
