// Giving a signal back to the program: a handler of ours is taken out only while it is still
// the one installed. A program that installed its own over it owns the signal from then on; its
// handler must never be replaced by the disposition we saw when ours went in.
#ifndef INPROF_PLATFORM_LINUX_SIGNAL_DISPOSITION_LINUX_H_
#define INPROF_PLATFORM_LINUX_SIGNAL_DISPOSITION_LINUX_H_

#include <signal.h>

namespace inprof::internal {

using PlainHandler = void (*)(int);
using InfoHandler = void (*)(int, siginfo_t*, void*);

// Whether `signal`'s current action is `handler`. Async-signal-safe.
bool handler_installed(int signal, PlainHandler handler);
bool handler_installed(int signal, InfoHandler handler);

// Puts `previous` back if `handler` is still `signal`'s action; otherwise leaves the program's
// action alone. True if restored. Async-signal-safe. (The check and the restore are two calls:
// a handler the program installs between them is lost; nothing can close that window.)
bool restore_if_still_ours(int signal, PlainHandler handler, const struct sigaction& previous);
bool restore_if_still_ours(int signal, InfoHandler handler, const struct sigaction& previous);

// For a handler of ours that runs in a forked child before the child's fork handler has given
// the signal back (a signal sent right after fork() can arrive there): the signal is not ours in
// that process. Puts `previous` back (as above) and sends the signal again to the calling thread;
// it arrives as the handler returns, to the program's own disposition (SIGTERM kills).
// Async-signal-safe.
void pass_on_in_child(int signal, PlainHandler handler, const struct sigaction& previous);

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_SIGNAL_DISPOSITION_LINUX_H_
