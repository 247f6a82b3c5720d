#include "signal_disposition_linux.h"

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

}  // namespace inprof::internal
