// Finding the allocation interposer (libinprof_allocations) in the process, if the user loaded
// it: preloaded, or linked through inprof::allocations. Platform code (a symbol lookup).
#ifndef INPROF_LIB_ALLOCATION_HOOKS_H_
#define INPROF_LIB_ALLOCATION_HOOKS_H_

#include "allocations/allocation_sink.h"

namespace inprof::internal {

struct AllocationHooks {
  int (*attach)(const InprofAllocationSink* sink) = nullptr;
  void (*exclude_this_thread)() = nullptr;
  void (*counts)(InprofAllocationCounts* out) = nullptr;
};

// False when the interposer is not in the process.
bool find_allocation_hooks(AllocationHooks* out);

}  // namespace inprof::internal

#endif  // INPROF_LIB_ALLOCATION_HOOKS_H_
