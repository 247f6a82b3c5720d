// ThreadLister over Mach: the task's threads from task_threads (ids from THREAD_IDENTIFIER_INFO,
// the ids pthread_threadid_np gives), CPU time and state from THREAD_BASIC_INFO, names from
// pthread. Portable over MachApi: runs on Linux over the fake Mach layer in the tests.
#ifndef INPROF_PLATFORM_MACOS_MACH_THREAD_LISTER_MACOS_H_
#define INPROF_PLATFORM_MACOS_MACH_THREAD_LISTER_MACOS_H_

#include <memory>

#include "mach_api_macos.h"
#include "mach_thread_ports_macos.h"
#include "sampling/thread_lister.h"

namespace inprof::internal {

class MachThreadLister final : public ThreadLister {
 public:
  // `api` must outlive the lister; `owned`, if given, is kept alive with it.
  explicit MachThreadLister(MachApi& api, std::shared_ptr<MachApi> owned = nullptr)
      : owned_(std::move(owned)), api_(api), ports_(api) {}

  bool list(std::vector<uint64_t>& tids) override { return ports_.refresh(&tids); }
  std::optional<uint64_t> cpu_time_ns(uint64_t tid) override;
  std::string name(uint64_t tid) override;
  std::optional<bool> asleep(uint64_t tid) override;
  void forget(uint64_t tid) override { ports_.forget(tid); }

 private:
  std::optional<MachThreadTimes> times(uint64_t tid);

  std::shared_ptr<MachApi> owned_;
  MachApi& api_;
  MachThreadPorts ports_;
};

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_MACOS_MACH_THREAD_LISTER_MACOS_H_
