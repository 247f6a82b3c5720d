// Crash capture: handlers for the fatal signals that hand the crash to a CrashWriter, then let the
// program's previous handler (or the default action) take the signal as it would have.
// Implemented per OS under platform/<os>/.
#ifndef INPROF_LIB_CRASH_HANDLER_H_
#define INPROF_LIB_CRASH_HANDLER_H_

#include <memory>
#include <string>

#include "inprof/profiler.h"
#include "sampling/sampler.h"
#include "session/crash_writer.h"

namespace inprof::internal {

class CrashHandler {
 public:
  // Opens `path` now (mode 0600, never through a symbolic link) and installs the handlers.
  // `writer` (and `sampler`, if given) must outlive the handler. One at a time per process.
  // With a sampler (enable_crash_samples() called), the crashing thread's registers and stack go
  // to it, so the crash sample is unwound like any other (DWARF included); without one, or if the
  // sampler does not answer within 100 ms, the handler walks frame pointers itself.
  // `empty_final_output`, if given, is the session's final dump, empty until stop(): a crash that
  // ends the process (no handler of the program's after ours) removes it if it is still that
  // empty file, so that the crash file is the one file the run leaves.
  static std::unique_ptr<CrashHandler> install(const std::string& path, CrashWriter* writer,
                                               Sampler* sampler, Status* status,
                                               const std::string& empty_final_output = {});
  // Restores the previous handlers; removes the file if no crash was written to it.
  virtual ~CrashHandler() = default;

  // In a forked child: the parent's file and writer are not the child's to use.
  static void disarm_after_fork();
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_CRASH_HANDLER_H_
