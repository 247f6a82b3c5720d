#include "child_program.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace inprof::launcher {
namespace {

volatile sig_atomic_t g_child = 0;

constexpr int kPassedOn[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGWINCH};

void pass_on(int sig) {
  const int saved = errno;
  if (g_child > 0) kill(static_cast<pid_t>(g_child), sig);
  errno = saved;
}

std::vector<char*> pointers(const std::vector<std::string>& args) {
  std::vector<char*> out;
  for (const std::string& a : args) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

// waitpid's status as a shell shows it.
ChildEnd ended(int status) {
  ChildEnd end;
  end.started = true;
  if (WIFEXITED(status)) {
    end.status = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    end.signal = WTERMSIG(status);
    end.status = 128 + end.signal;
  } else {
    end.status = 1;
  }
  return end;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

}  // namespace

ChildEnd run_child_program(const std::vector<std::string>& argv) {
  // The child learns its exec failed through a close-on-exec pipe: one byte, the errno.
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return {false, 127, 0};
  std::vector<char*> args = pointers(argv);
  struct sigaction ignore = {}, forward = {}, old_int = {}, old_quit = {};
  ignore.sa_handler = SIG_IGN;
  forward.sa_handler = pass_on;
  forward.sa_flags = SA_RESTART;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  const pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "inprof: cannot start '%s': %s\n", argv[0].c_str(), std::strerror(errno));
    return {false, 127, 0};
  }
  if (child == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    setenv("INPROF_ROOT_PID", std::to_string(getpid()).c_str(), 1);
    execvp(args[0], args.data());
    const unsigned char error = static_cast<unsigned char>(errno);
    (void)!write(report[1], &error, 1);
    _exit(127);
  }
  g_child = child;
  for (int sig : kPassedOn) sigaction(sig, &forward, nullptr);
  close(report[1]);
  unsigned char error = 0;
  ssize_t n;
  do {
    n = read(report[0], &error, 1);
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  const int status = wait_for(child);
  g_child = 0;
  for (int sig : kPassedOn) signal(sig, SIG_DFL);
  if (n == 1) {
    std::fprintf(stderr, "inprof: cannot run '%s': %s\n", argv[0].c_str(), std::strerror(error));
    return {false, error == ENOENT ? 127 : 126, 0};
  }
  if (status < 0) return {false, 127, 0};
  return ended(status);
}

int run_tool(const std::vector<std::string>& argv, const std::vector<std::string>& unset,
             const std::string* preload) {
  std::vector<char*> args = pointers(argv);
  const pid_t pid = fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    for (const std::string& name : unset) unsetenv(name.c_str());
    if (preload && !preload->empty()) {
      setenv("LD_PRELOAD", preload->c_str(), 1);
    } else {
      unsetenv("LD_PRELOAD");
    }
    execv(args[0], args.data());
    std::fprintf(stderr, "inprof: cannot run '%s': %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  const int status = wait_for(pid);
  return status < 0 ? 127 : ended(status).status;
}

void end_like(const ChildEnd& end, int exit_code) {
  if (end.signal != 0) {
    std::fflush(nullptr);
    // PROGRAM's core, if any, is written: not a second one of ours.
    const struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(end.signal, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, end.signal);
    sigprocmask(SIG_UNBLOCK, &only, nullptr);
    raise(end.signal);
  }
  std::exit(exit_code);
}

}  // namespace inprof::launcher
