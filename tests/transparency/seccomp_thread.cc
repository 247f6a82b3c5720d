// Item: a thread in seccomp strict mode (only read, write, exit and sigreturn allowed) is never
// interrupted: a signal handler that made any other system call would get the process killed.
// The thread enters strict mode, computes for a while, writes its result and exits; the
// program then prints it. Another thread computes beside it the whole time (it is sampled).
#include <linux/seccomp.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "transparency.h"

namespace {

int result_pipe[2];

uint64_t work(uint64_t rounds) {
  uint64_t x = 1;
  for (uint64_t i = 0; i < rounds; ++i) x = x * 6364136223846793005u + 1442695040888963407u;
  return x;
}

void* strict_thread(void*) {
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) != 0) {
    const char no[] = "no";
    (void)!write(result_pipe[1], no, 2);
    return nullptr;
  }
  const uint64_t x = work(300000000);  // ~0.3 s: no clock may be read here
  char digit = static_cast<char>('0' + (x % 10));
  (void)!write(result_pipe[1], &digit, 1);
  syscall(SYS_exit, 0);  // pthread's exit path makes calls strict mode forbids
  return nullptr;
}

}  // namespace

int main() {
  if (pipe(result_pipe) != 0) return 2;
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop.load()) transparency::spin_cpu_ms(5);
  });
  pthread_t thread;
  pthread_create(&thread, nullptr, strict_thread, nullptr);
  char buf[4] = {};
  const ssize_t n = read(result_pipe[0], buf, sizeof(buf) - 1);
  pthread_join(thread, nullptr);
  stop.store(true);
  busy.join();
  std::printf("strict thread wrote %zd byte(s): %s\n", n, buf);
  return 0;
}
