// Thread-exit calls through fiber-local storage: FlsAlloc's callback runs on the exiting thread
// for each slot holding a non-null value (thread_exit_hook.h says why not thread_local).
#include <windows.h>

#include "threads/thread_exit_hook.h"

namespace inprof::internal {

bool create_thread_exit_slot(ThreadExitCallback callback, unsigned* slot) {
  const DWORD index = FlsAlloc(callback);
  if (index == FLS_OUT_OF_INDEXES) return false;
  *slot = index;
  return true;
}

void set_thread_exit_value(unsigned slot, void* value) { FlsSetValue(slot, value); }

}  // namespace inprof::internal
