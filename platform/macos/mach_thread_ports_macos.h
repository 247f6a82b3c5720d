// A send right per thread of this task, by thread id, from task_threads: what the thread lister
// and the suspend copier address a thread with. Every right task_threads hands out is either
// kept here (one per thread) or deallocated at once, and the array is always given back.
// Called from the sampler thread only, never while a thread is suspended (it allocates).
#ifndef INPROF_PLATFORM_MACOS_MACH_THREAD_PORTS_MACOS_H_
#define INPROF_PLATFORM_MACOS_MACH_THREAD_PORTS_MACOS_H_

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "mach_api_macos.h"

namespace inprof::internal {

class MachThreadPorts {
 public:
  explicit MachThreadPorts(MachApi& api) : api_(api) {}
  ~MachThreadPorts();
  MachThreadPorts(const MachThreadPorts&) = delete;
  MachThreadPorts& operator=(const MachThreadPorts&) = delete;

  // Lists the task's threads: their ids into `tids` (if not null); keeps one right for each and
  // drops those of threads no longer listed. False if task_threads failed (nothing changes).
  bool refresh(std::vector<uint64_t>* tids);
  // The right kept for `tid`, listing the threads once if there is none; kMachPortNull if the
  // thread does not exist.
  MachPort find(uint64_t tid);
  // The thread is gone: its right is deallocated.
  void forget(uint64_t tid);
  size_t size() const { return ports_.size(); }

 private:
  MachApi& api_;
  std::unordered_map<uint64_t, MachPort> ports_;
};

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_MACOS_MACH_THREAD_PORTS_MACOS_H_
