// The interposer's entry points, looked up by name in every loaded object.
#include <dlfcn.h>

#include "allocations/allocation_hooks.h"

namespace inprof::internal {

bool find_allocation_hooks(AllocationHooks* out) {
  AllocationHooks hooks;
  hooks.attach = reinterpret_cast<int (*)(const InprofAllocationSink*)>(
      dlsym(RTLD_DEFAULT, "inprof_allocations_attach_v1"));
  hooks.exclude_this_thread = reinterpret_cast<void (*)()>(
      dlsym(RTLD_DEFAULT, "inprof_allocations_exclude_this_thread_v1"));
  hooks.counts = reinterpret_cast<void (*)(InprofAllocationCounts*)>(
      dlsym(RTLD_DEFAULT, "inprof_allocations_counts_v1"));
  if (!hooks.attach || !hooks.exclude_this_thread || !hooks.counts) return false;
  *out = hooks;
  return true;
}

}  // namespace inprof::internal
