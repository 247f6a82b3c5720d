#include "signal_disposition_linux.h"

#include <sys/syscall.h>
#include <unistd.h>

namespace inprof::internal {

bool handler_installed(int signal, PlainHandler handler) {
  struct sigaction current = {};
  if (sigaction(signal, nullptr, &current) != 0) return false;
  return !(current.sa_flags & SA_SIGINFO) && current.sa_handler == handler;
}

bool handler_installed(int signal, InfoHandler handler) {
  struct sigaction current = {};
  if (sigaction(signal, nullptr, &current) != 0) return false;
  return (current.sa_flags & SA_SIGINFO) && current.sa_sigaction == handler;
}

bool restore_if_still_ours(int signal, PlainHandler handler, const struct sigaction& previous) {
  return handler_installed(signal, handler) && sigaction(signal, &previous, nullptr) == 0;
}

bool restore_if_still_ours(int signal, InfoHandler handler, const struct sigaction& previous) {
  return handler_installed(signal, handler) && sigaction(signal, &previous, nullptr) == 0;
}

void pass_on_in_child(int signal, PlainHandler handler, const struct sigaction& previous) {
  if (restore_if_still_ours(signal, handler, previous)) {
    syscall(SYS_tgkill, syscall(SYS_getpid), syscall(SYS_gettid), signal);
  }
}

}  // namespace inprof::internal
