// Item 7: with INPROF_SIGNAL_DUMP=SIGTERM, the dump handler belongs to the running session of
// this process only. A forked worker has no session: SIGTERM kills it as it would unprofiled.
// Once the profiler has stopped (through the C API when it is there), SIGTERM kills the parent
// too: its status is 143 (killed by SIGTERM) profiled or not.
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>

namespace {

// Waits for the worker, at most ~10 s: one that survives SIGTERM must fail the test, not hang it.
bool wait_for(pid_t pid, int* status) {
  for (int i = 0; i < 1000; ++i) {
    if (waitpid(pid, status, WNOHANG) == pid) return true;
    timespec ten_ms{0, 10000000};
    nanosleep(&ten_ms, nullptr);
  }
  return false;
}

}  // namespace

int main() {
  const pid_t worker = fork();
  if (worker == 0) {
    for (;;) pause();
  }
  kill(worker, SIGTERM);
  int status = 0;
  if (!wait_for(worker, &status)) {
    std::printf("worker survived SIGTERM\n");
    kill(worker, SIGKILL);
    waitpid(worker, &status, 0);
  } else if (WIFSIGNALED(status)) {
    std::printf("worker killed by signal %d\n", WTERMSIG(status));
  } else {
    std::printf("worker exited %d\n", WEXITSTATUS(status));
  }

  using StopFunction = int (*)();
  if (auto stop = reinterpret_cast<StopFunction>(dlsym(RTLD_DEFAULT, "inprof_stop"))) stop();
  std::fflush(stdout);
  raise(SIGTERM);
  std::printf("survived SIGTERM after stop\n");
  return 0;
}
