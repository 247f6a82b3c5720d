// Item: a thread that blocks every signal and waits for them in sigwait/sigtimedwait/signalfd
// must never receive the profiler's signal. The program blocks all signals, runs busy workers
// (which inherit the mask) and waits, three ways, for a SIGTERM it sends itself after a while.
// It prints every signal it received: only SIGTERM, three times.
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> stop{false};

void spin_for_ms(int ms) {
  timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  volatile uint64_t x = 0;
  do {
    for (int i = 0; i < 1000; ++i) x = x + i;
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}

// Busy, then SIGTERM to the process after `ms`.
void send_term_after(int ms) {
  std::thread([ms] {
    spin_for_ms(ms);
    kill(getpid(), SIGTERM);
  }).detach();
}

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

  stop.store(true);
  for (auto& t : workers) t.join();
  return 0;
}
