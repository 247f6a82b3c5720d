// The stop trigger where there is no dump signal (macOS, Windows): a small thread of its own that
// stops the running session once a delay has passed. The platforms' arm_stop_trigger
// (stop_trigger.h) refuse a signal and hand the delay here.
#ifndef INPROF_LIB_SESSION_DURATION_STOP_H_
#define INPROF_LIB_SESSION_DURATION_STOP_H_

#include <chrono>

#include "inprof/profiler.h"

namespace inprof::internal {

// Starts the thread; it stops the session after `after` unless disarm_duration_stop() came first.
// One at a time.
Status arm_duration_stop(std::chrono::nanoseconds after);
// The session ended: a thread still waiting leaves a later session alone.
void disarm_duration_stop();

}  // namespace inprof::internal

#endif  // INPROF_LIB_SESSION_DURATION_STOP_H_
