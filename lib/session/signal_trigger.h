// Runs an action on a thread of its own each time a signal arrives: a signal handler can neither
// allocate nor write a compressed file, so it only wakes that thread. Implemented per OS under
// platform/<os>/.
#ifndef INPROF_LIB_SIGNAL_TRIGGER_H_
#define INPROF_LIB_SIGNAL_TRIGGER_H_

#include <functional>
#include <memory>

#include "inprof/profiler.h"

namespace inprof::internal {

class SignalTrigger {
 public:
  // Fails if the program already handles `signal`. A handler the program installs for it later
  // wins: the signal is the program's from then on and the trigger no longer fires.
  static std::unique_ptr<SignalTrigger> create(int signal, const char* thread_name,
                                               std::function<void()> action, Status* status);
  // Restores the signal's previous disposition, unless the program replaced our handler (then its
  // own stays), and ends the thread (after a running action).
  virtual ~SignalTrigger() = default;

  // In a forked child: give the signal back (as above) without touching the parent's thread.
  static void disarm_after_fork();
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_SIGNAL_TRIGGER_H_
