// Minimal reproducer for blocking_syscalls' failure: a thread in sem_timedwait() or a timed raw
// futex wait sees EINTR while inprof samples it (Linux turns a timed futex wait interrupted by any
// handler into EINTR, SA_RESTART or not, and neither call goes through inprof's wrappers).
//   torture_repro_eintr DUMP   -> prints the EINTR counts; exit 1 if any
#include <errno.h>
#include <inprof/profiler.h>
#include <linux/futex.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>

static void spin() {
  for (int k = 0; k < 100000; ++k) asm volatile("");
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  inprof::Options o;
  o.interval = std::chrono::microseconds(100);
  o.output_path = argv[1];
  if (!inprof::Profiler::start(o)) return 2;
  int sem_eintr = 0, futex_eintr = 0;
  std::thread sem_thread([&] {
    sem_t sem;
    sem_init(&sem, 0, 0);
    for (int i = 0; i < 200; ++i) {
      timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += 2000000;
      if (until.tv_nsec >= 1000000000) until.tv_nsec -= 1000000000, ++until.tv_sec;
      if (sem_timedwait(&sem, &until) != 0 && errno == EINTR) ++sem_eintr;
      spin();  // run a little, so that the sampler interrupts us
    }
  });
  std::thread futex_thread([&] {
    std::atomic<uint32_t> word{0};
    const timespec two_ms = {0, 2000000};
    for (int i = 0; i < 200; ++i) {
      if (syscall(SYS_futex, &word, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, &two_ms, nullptr, 0) != 0 &&
          errno == EINTR) {
        ++futex_eintr;
      }
      spin();
    }
  });
  sem_thread.join();
  futex_thread.join();
  (void)inprof::Profiler::stop();
  std::printf("sem_timedwait: EINTR %d of 200; futex(FUTEX_WAIT, 2 ms): EINTR %d of 200\n",
              sem_eintr, futex_eintr);
  return sem_eintr || futex_eintr ? 1 : 0;
}
