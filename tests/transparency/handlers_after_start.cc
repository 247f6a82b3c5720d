// Item 7: handlers the program installs after the profiler installed its own (for the capture
// signal SIGUSR1, the dump signal SIGUSR2) take those signals, and are still the program's once
// the profiler stops and in a forked child: nothing resets them. The profiler is stopped through
// the C API when it is there (profiled runs), so that what follows the stop is checked too.
// Run with INPROF_MODE=ring INPROF_SIGNAL_CAPTURE=SIGUSR1 INPROF_SIGNAL_DUMP=SIGUSR2.
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace {

std::atomic<int> g_usr1{0}, g_usr2{0};

void on_usr1(int) { ++g_usr1; }
void on_usr2(int) { ++g_usr2; }

void install(int signal, void (*handler)(int)) {
  struct sigaction action = {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  sigaction(signal, &action, nullptr);
}

const char* owner(int signal, void (*handler)(int)) {
  struct sigaction current = {};
  sigaction(signal, nullptr, &current);
  return current.sa_handler == handler ? "the program's" : "NOT the program's";
}

void report(const char* when) {
  std::printf("%s: SIGUSR1 handler %s, SIGUSR2 handler %s\n", when, owner(SIGUSR1, on_usr1),
              owner(SIGUSR2, on_usr2));
}

void raise_both() {
  raise(SIGUSR1);
  raise(SIGUSR2);
}

}  // namespace

int main() {
  install(SIGUSR1, on_usr1);
  install(SIGUSR2, on_usr2);
  raise_both();
  report("installed");

  pid_t child = fork();
  if (child == 0) {
    raise_both();
    _exit(g_usr1 == 2 && g_usr2 == 2 ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("forked child: %s\n",
              WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "its handlers ran" : "FAILED");

  using StopFunction = int (*)();
  if (auto stop = reinterpret_cast<StopFunction>(dlsym(RTLD_DEFAULT, "inprof_stop"))) stop();
  report("after stop");
  raise_both();
  std::printf("SIGUSR1 caught %d times, SIGUSR2 %d times\n", g_usr1.load(), g_usr2.load());
  return 0;
}
