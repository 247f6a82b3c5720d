// Allocation profiling is not available on Windows: there is no interposer.
#include "allocations/allocation_hooks.h"

namespace inprof::internal {

bool find_allocation_hooks(AllocationHooks*) { return false; }

}  // namespace inprof::internal
