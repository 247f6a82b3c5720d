// A call on each thread as it exits, for platforms where a thread_local's destructor cannot be
// used for that: MinGW-w64's emulated TLS frees a thread's thread_local storage before their
// destructors run, so a destructor reads freed memory. Built only where INPROF_THREAD_EXIT_HOOK
// is defined (CMakeLists.txt); implemented under platform/<os>/ (Windows: fiber-local storage,
// whose callback runs on the exiting thread).
#ifndef INPROF_LIB_THREAD_EXIT_HOOK_H_
#define INPROF_LIB_THREAD_EXIT_HOOK_H_

namespace inprof::internal {

using ThreadExitCallback = void (*)(void* value);

// Creates a slot whose callback runs on every exiting thread that stored a non-null value in it.
// Returns false if the OS has no slot left.
bool create_thread_exit_slot(ThreadExitCallback callback, unsigned* slot);
// Stores the calling thread's value for `slot`.
void set_thread_exit_value(unsigned slot, void* value);

}  // namespace inprof::internal

#endif  // INPROF_LIB_THREAD_EXIT_HOOK_H_
