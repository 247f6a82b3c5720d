// PROGRAM run as the launcher's child, for a run that has work to do after it (a profile to
// write, one to serve): the launcher stays its parent, passes on the signals meant for it, and
// ends the way PROGRAM did.
#ifndef INPROF_TOOLS_INPROF_CHILD_PROGRAM_H_
#define INPROF_TOOLS_INPROF_CHILD_PROGRAM_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace inprof::launcher {

struct ChildEnd {
  bool started = false;  // false: fork or exec failed (said on stderr; status is 127 or 126)
  int status = 0;        // as a shell shows it: the exit code, or 128 + the signal
  int signal = 0;        // the signal that killed it, or 0
};

// Runs `argv` (execvp) with INPROF_ROOT_PID set to its own pid and waits for it. Meanwhile
// SIGINT and SIGQUIT are ignored here (a terminal sends them to PROGRAM too: passing them on would
// deliver each twice), and SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM and SIGWINCH are passed on.
ChildEnd run_child_program(const std::vector<std::string>& argv);

// A process that runs `argv` (execv) with `unset` removed from the environment and LD_PRELOAD as
// `preload` (none if empty); waits for it. Its status as a shell shows it (127: not started).
int run_tool(const std::vector<std::string>& argv, const std::vector<std::string>& unset,
             const std::string* preload);

// Ends this process as PROGRAM ended: with its exit code, or killed by the same signal (a shell
// or a supervisor sees the same end as without the launcher).
[[noreturn]] void end_like(const ChildEnd& end, int exit_code);

}  // namespace inprof::launcher

#endif  // INPROF_TOOLS_INPROF_CHILD_PROGRAM_H_
