// Facts about this process and the clocks the profiler uses, per OS.
#ifndef INPROF_LIB_PROCESS_INFO_H_
#define INPROF_LIB_PROCESS_INFO_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace inprof::internal {

uint64_t process_id();
uint64_t current_thread_id();
uint64_t main_thread_id();
const char* os_name();
std::string executable_path();
std::vector<std::string> command_line();

// The clock of every timestamp in a dump (CLOCK_MONOTONIC on Linux); async-signal-safe.
uint64_t monotonic_ns();
// Wall-clock time, to place the session on a calendar.
uint64_t wall_clock_ns();
// CPU time the calling thread has used (0 where the OS does not say): what the profiler's own
// threads cost, stated in every dump.
uint64_t current_thread_cpu_ns();

// Copies up to `size` bytes at `address` of this process into `out` without risking a fault (an
// unmapped page ends the copy). Returns the bytes copied.
size_t read_memory(uint64_t address, void* out, size_t size);

// A signal's number from its name without "SIG" ("PROF", "USR2", "RTMIN+3"); 0 if unknown.
int signal_number(const std::string& name);

// Has `prepare`, `parent` and `child` called around every fork() of the process (pthread_atfork);
// nothing where the OS has no fork.
void call_around_fork(void (*prepare)(), void (*parent)(), void (*child)());

// Prepares a thread of the profiler's own: gives it a name and keeps the process's signals away
// from it (they belong to the program's threads). (The thread also holds a ProfilerThreadMark.)
void setup_profiler_thread(const char* name);

// Gives the calling thread (one of the profiler's) a descriptor table of its own, holding only
// `keep` (-1: none) of the program's: what it opens from then on never takes one of the program's
// numbers, and nothing the program closes or dup2()s reaches it. False where it cannot (the thread
// then shares the program's table, and checks each descriptor before use).
bool use_private_descriptor_table(int keep);

// Writes `line` to the program's standard error as it is now (from a thread with a private table
// too), with one system call, never through stdio (whose error flag is the program's).
void say_on_stderr(const std::string& line);

}  // namespace inprof::internal

#endif  // INPROF_LIB_PROCESS_INFO_H_
