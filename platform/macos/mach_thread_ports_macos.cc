#include "mach_thread_ports_macos.h"

#include <unordered_set>

namespace inprof::internal {

MachThreadPorts::~MachThreadPorts() {
  for (const auto& [tid, port] : ports_) api_.port_deallocate(port);
}

bool MachThreadPorts::refresh(std::vector<uint64_t>* tids) {
  MachPort* threads = nullptr;
  uint32_t count = 0;
  if (api_.task_threads(&threads, &count) != kKernSuccess) return false;
  if (tids != nullptr) tids->clear();
  std::unordered_set<uint64_t> listed;
  listed.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const MachPort port = threads[i];
    uint64_t tid = 0;
    if (api_.thread_id(port, &tid) != kKernSuccess) {  // exited since the listing
      api_.port_deallocate(port);
      continue;
    }
    listed.insert(tid);
    if (tids != nullptr) tids->push_back(tid);
    auto [it, inserted] = ports_.try_emplace(tid, port);
    if (inserted) continue;
    // Already kept: the listing added a reference to the same name (or, were an id ever to name
    // a new thread, the old right is the stale one).
    if (it->second == port) {
      api_.port_deallocate(port);
    } else {
      api_.port_deallocate(it->second);
      it->second = port;
    }
  }
  api_.release_thread_array(threads, count);
  for (auto it = ports_.begin(); it != ports_.end();) {
    if (listed.count(it->first) != 0) {
      ++it;
      continue;
    }
    api_.port_deallocate(it->second);
    it = ports_.erase(it);
  }
  return true;
}

MachPort MachThreadPorts::find(uint64_t tid) {
  auto it = ports_.find(tid);
  if (it != ports_.end()) return it->second;
  if (!refresh(nullptr)) return kMachPortNull;
  it = ports_.find(tid);
  return it == ports_.end() ? kMachPortNull : it->second;
}

void MachThreadPorts::forget(uint64_t tid) {
  auto it = ports_.find(tid);
  if (it == ports_.end()) return;
  api_.port_deallocate(it->second);
  ports_.erase(it);
}

}  // namespace inprof::internal
