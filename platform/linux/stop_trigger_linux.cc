// The stop trigger on Linux: the signal handler writes one byte to a pipe (async-signal-safe);
// a thread polls the pipe with the remaining time as its timeout, then stops the profiler.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

#include "process_info.h"
#include "stop_trigger.h"

namespace inprof::internal {
namespace {

int g_pipe[2] = {-1, -1};

void on_dump_signal(int) {
  const int saved = errno;
  const char byte = 1;
  (void)!write(g_pipe[1], &byte, 1);
  errno = saved;
}

}  // namespace

Status arm_stop_trigger(std::optional<std::chrono::nanoseconds> after, int signal) {
  if (g_pipe[0] >= 0) {
    return Status::error(Status::Code::kAlreadyRunning, "a stop trigger is already armed");
  }
  if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::error(Status::Code::kPlatformError,
                         std::string("cannot create the stop trigger: ") + std::strerror(errno));
  }
  if (signal != 0) {
    struct sigaction previous = {};
    sigaction(signal, nullptr, &previous);
    if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
      return Status::error(Status::Code::kSignalInUse,
                           "the dump signal is already handled by the program; not armed");
    }
    struct sigaction action = {};
    action.sa_handler = on_dump_signal;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(signal, &action, nullptr);
  }
  const uint64_t deadline = after ? monotonic_ns() + static_cast<uint64_t>(after->count()) : 0;
  std::thread([deadline] {
    setup_profiler_thread("inprof-stopper");
    for (;;) {
      int timeout_ms = -1;
      if (deadline != 0) {
        const uint64_t now = monotonic_ns();
        if (now >= deadline) break;
        timeout_ms = static_cast<int>((deadline - now + 999999) / 1000000);
      }
      pollfd fd{g_pipe[0], POLLIN, 0};
      const int n = poll(&fd, 1, timeout_ms);
      if (n > 0) break;  // the dump signal
      if (n < 0 && errno != EINTR) return;
    }
    if (Profiler::is_running()) (void)Profiler::stop();
  }).detach();
  return {};
}

}  // namespace inprof::internal
