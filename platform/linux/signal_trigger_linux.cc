// SignalTrigger on Linux: the handler writes a byte to a pipe (async-signal-safe); a thread polls
// the pipe and runs the action. A second pipe ends the thread.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "session/process_info.h"
#include "session/signal_trigger.h"
#include "signal_disposition_linux.h"
#include "threads/profiler_threads.h"

namespace inprof::internal {
namespace {

int g_signal_pipe[2] = {-1, -1};
int g_armed_signal = 0;
struct sigaction g_previous = {};
long g_owner = 0;  // the process that armed it: a forked child is not

void on_trigger_signal(int signal) {
  const int saved = errno;
  if (syscall(SYS_getpid) == g_owner) {
    const char byte = 1;
    (void)!write(g_signal_pipe[1], &byte, 1);
  } else {
    pass_on_in_child(signal, on_trigger_signal, g_previous);
  }
  errno = saved;
}

void close_pipe(int fds[2]) {
  for (int i = 0; i < 2; ++i) {
    if (fds[i] >= 0) ::close(fds[i]);
    fds[i] = -1;
  }
}

class LinuxSignalTrigger final : public SignalTrigger {
 public:
  LinuxSignalTrigger(const char* name, std::function<void()> action) {
    (void)pipe2(stop_pipe_, O_CLOEXEC | O_NONBLOCK);
    (void)thread_.start(name, [this, action = std::move(action)] {
      for (;;) {
        pollfd fds[2] = {{g_signal_pipe[0], POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) {
          if (errno == EINTR) continue;
          return;
        }
        if (fds[1].revents) return;
        if (fds[0].revents & POLLIN) {
          char drained[64];
          while (read(g_signal_pipe[0], drained, sizeof drained) > 0) {
          }
          action();
        }
      }
    });
  }

  ~LinuxSignalTrigger() override {
    restore_if_still_ours(g_armed_signal, on_trigger_signal, g_previous);
    g_armed_signal = 0;
    const char byte = 1;
    (void)!write(stop_pipe_[1], &byte, 1);
    thread_.join();  // nothing to join when the thread was refused
    close_pipe(stop_pipe_);
    close_pipe(g_signal_pipe);
  }

 private:
  int stop_pipe_[2] = {-1, -1};
  ProfilerThread thread_;
};

}  // namespace

std::unique_ptr<SignalTrigger> SignalTrigger::create(int signal, const char* thread_name,
                                                     std::function<void()> action, Status* status) {
  if (g_armed_signal != 0) {
    *status = Status::error(Status::Code::kAlreadyRunning, "a capture signal is already armed");
    return nullptr;
  }
  struct sigaction previous = {};
  if (signal <= 0 || signal >= NSIG || sigaction(signal, nullptr, &previous) != 0) {
    *status = Status::error(Status::Code::kInvalidOption,
                            "capture_signal " + std::to_string(signal) + " is not a signal");
    return nullptr;
  }
  if ((previous.sa_flags & SA_SIGINFO) ||
      (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN)) {
    *status = Status::error(Status::Code::kSignalInUse,
                            "the capture signal " + std::to_string(signal) +
                                " is already handled by the program; pick another");
    return nullptr;
  }
  if (pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    *status = Status::error(Status::Code::kPlatformError,
                            std::string("cannot create the capture pipe: ") + std::strerror(errno));
    return nullptr;
  }
  g_previous = previous;
  g_armed_signal = signal;
  g_owner = syscall(SYS_getpid);
  struct sigaction handler = {};
  handler.sa_handler = on_trigger_signal;
  handler.sa_flags = SA_RESTART;
  sigemptyset(&handler.sa_mask);
  sigaction(signal, &handler, nullptr);
  *status = {};
  return std::make_unique<LinuxSignalTrigger>(thread_name, std::move(action));
}

void SignalTrigger::disarm_after_fork() {
  if (g_armed_signal == 0) return;
  restore_if_still_ours(g_armed_signal, on_trigger_signal, g_previous);
  g_armed_signal = 0;
  close_pipe(g_signal_pipe);
}

}  // namespace inprof::internal
