// Stops the running session (writing its dump) after a delay or when a signal arrives, from a
// small thread of its own: a signal handler cannot stop the profiler itself.
#ifndef INPROF_LIB_STOP_TRIGGER_H_
#define INPROF_LIB_STOP_TRIGGER_H_

#include <chrono>
#include <optional>

#include "inprof/profiler.h"

namespace inprof::internal {

Status arm_stop_trigger(std::optional<std::chrono::nanoseconds> after, int signal);

}  // namespace inprof::internal

#endif  // INPROF_LIB_STOP_TRIGGER_H_
