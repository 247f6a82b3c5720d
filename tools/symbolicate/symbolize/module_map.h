// Finds the module an address belonged to at a given time, honouring load and unload times.
#ifndef INPROF_TOOLS_SYMBOLICATE_MODULE_MAP_H_
#define INPROF_TOOLS_SYMBOLICATE_MODULE_MAP_H_

#include <cstdint>
#include <vector>

#include "read/profile_model.h"

namespace inprof::symbolicate {

class ModuleMap {
 public:
  static constexpr size_t kNone = static_cast<size_t>(-1);

  explicit ModuleMap(const std::vector<ModuleInfo>& modules);

  // Index into `modules` of the module holding `addr` at `time_ns`: one loaded at or before that
  // time and not unloaded before it; failing that, any module containing the address. kNone if
  // no module contains it.
  size_t find(uint64_t addr, uint64_t time_ns) const;

  // Changes only when a module is loaded or unloaded, so two times with the same epoch resolve
  // every address to the same module.
  size_t epoch(uint64_t time_ns) const;
  // The first time after `epoch` (UINT64_MAX for the last one).
  uint64_t epoch_end(size_t epoch) const {
    return epoch < thresholds_.size() ? thresholds_[epoch] : UINT64_MAX;
  }

 private:
  const std::vector<ModuleInfo>& modules_;
  std::vector<uint64_t> thresholds_;  // sorted times at which the set of live modules changes
  // The modules by start address, and the largest end among each and those before it: the
  // modules containing an address are found by a binary search and a short walk back, not by a
  // scan of every module (a big program maps hundreds; every frame of every stack asks).
  std::vector<uint32_t> by_start_;
  std::vector<uint64_t> max_end_;
};

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_MODULE_MAP_H_
