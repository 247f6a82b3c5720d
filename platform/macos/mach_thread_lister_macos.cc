#include "mach_thread_lister_macos.h"

namespace inprof::internal {

std::optional<MachThreadTimes> MachThreadLister::times(uint64_t tid) {
  const MachPort port = ports_.find(tid);
  if (port == kMachPortNull) return std::nullopt;
  MachThreadTimes times;
  const KernReturn kr = api_.thread_times(port, &times);
  if (kr == kKernSuccess) return times;
  if (is_thread_death(kr)) ports_.forget(tid);
  return std::nullopt;
}

std::optional<uint64_t> MachThreadLister::cpu_time_ns(uint64_t tid) {
  const std::optional<MachThreadTimes> t = times(tid);
  if (!t) return std::nullopt;
  return t->user_ns + t->system_ns;
}

std::optional<bool> MachThreadLister::asleep(uint64_t tid) {
  const std::optional<MachThreadTimes> t = times(tid);
  if (!t) return std::nullopt;
  return t->waiting;
}

std::string MachThreadLister::name(uint64_t tid) {
  const MachPort port = ports_.find(tid);
  char buffer[64] = {};
  if (port == kMachPortNull || !api_.thread_name(port, buffer, sizeof(buffer) - 1)) return {};
  return buffer;
}

}  // namespace inprof::internal
