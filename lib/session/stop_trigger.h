// Stops the running session (writing its dump) after a delay or when a signal arrives, from a
// small thread of its own: a signal handler cannot stop the profiler itself.
//
// The trigger serves the session that is running when it is armed and ends with it, whatever
// ends it: the signal's disposition is then the program's again (SIGTERM kills once the dump is
// written). A handler the program installs for the signal meanwhile wins: the signal is the
// program's from then on, and only the delay (if any) still stops the session.
#ifndef INPROF_LIB_STOP_TRIGGER_H_
#define INPROF_LIB_STOP_TRIGGER_H_

#include <chrono>
#include <optional>

#include "inprof/profiler.h"

namespace inprof::internal {

Status arm_stop_trigger(std::optional<std::chrono::nanoseconds> after, int signal);

// Called as the session ends (from Session::stop(), which the trigger's own stop may be running):
// gives the signal back unless the program replaced our handler, and lets the thread go.
// Nothing to do when no trigger is armed.
void disarm_stop_trigger();

// In a forked child (which has no trigger thread): gives the signal back as above.
void disarm_stop_trigger_after_fork();

}  // namespace inprof::internal

#endif  // INPROF_LIB_STOP_TRIGGER_H_
