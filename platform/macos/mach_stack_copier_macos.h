// StackCopier over Mach (Chromium's order): thread_suspend -> timestamp -> thread_get_state ->
// a bounded copy of [SP, stack base) into the snapshot's preallocated buffer -> thread_resume.
// Unwinding happens afterwards, on the copy. The stack's bounds are read before the thread is
// stopped; thread_get_state runs once at construction so that anything dyld binds lazily on
// first use is bound before any thread is stopped (a stopped thread may hold dyld's lock).
// Portable over MachApi: runs on Linux over the fake Mach layer in the tests.
//
// SUSPENDED (between thread_suspend and thread_resume): thread_get_state, now_ns, plain copies
// and the label copy only. No allocation, lock or log; the sampler thread is never stopped.
#ifndef INPROF_PLATFORM_MACOS_MACH_STACK_COPIER_MACOS_H_
#define INPROF_PLATFORM_MACOS_MACH_STACK_COPIER_MACOS_H_

#include <memory>

#include "mach_api_macos.h"
#include "mach_thread_ports_macos.h"
#include "sampling/stack_copier.h"

namespace inprof::internal {

class MachStackCopier final : public StackCopier {
 public:
  // `api` must outlive the copier; `owned`, if given, is kept alive with it.
  explicit MachStackCopier(MachApi& api, std::shared_ptr<MachApi> owned = nullptr);

  CopyResult copy(uint64_t tid, StackSnapshot& out) override;

  // Times thread_resume failed (the thread may then stay stopped; nothing else can be done).
  uint64_t resume_failures() const { return resume_failures_; }
  size_t ports_kept() const { return ports_.size(); }

 private:
  std::shared_ptr<MachApi> owned_;
  MachApi& api_;
  MachThreadPorts ports_;
  const uint64_t code_mask_;
  uint64_t resume_failures_ = 0;
};

// SUSPENDED: copies [SP, bounds.base) into `out`'s buffer, at most its capacity, when SP lies in
// the thread's stack; otherwise the copy stays empty (registers only). Exposed for the tests.
void copy_thread_stack(const MachStackBounds& bounds, StackSnapshot& out);

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_MACOS_MACH_STACK_COPIER_MACOS_H_
