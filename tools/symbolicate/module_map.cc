#include "module_map.h"

#include <algorithm>

namespace inprof::symbolicate {

ModuleMap::ModuleMap(const std::vector<ModuleInfo>& modules) : modules_(modules) {
  for (const ModuleInfo& m : modules_) {
    thresholds_.push_back(m.record.time_ns);
    // Live while time <= unload time, so the set changes at unload + 1.
    if (m.unload_ns != kNever) thresholds_.push_back(m.unload_ns + 1);
  }
  std::sort(thresholds_.begin(), thresholds_.end());
}

size_t ModuleMap::epoch(uint64_t time_ns) const {
  return static_cast<size_t>(std::upper_bound(thresholds_.begin(), thresholds_.end(), time_ns) -
                             thresholds_.begin());
}

size_t ModuleMap::find(uint64_t addr, uint64_t time_ns) const {
  size_t live = kNone;
  size_t fallback = kNone;
  for (size_t i = 0; i < modules_.size(); ++i) {
    const internal::ModuleRecord& r = modules_[i].record;
    if (addr < r.start || addr >= r.end) continue;
    bool is_live = r.time_ns <= time_ns && time_ns <= modules_[i].unload_ns;
    // Among several candidates the most recently loaded wins.
    if (is_live) {
      if (live == kNone || r.time_ns >= modules_[live].record.time_ns) live = i;
    } else if (fallback == kNone) {
      fallback = i;
    } else {
      // Prefer the module whose lifetime is nearest to the sample time.
      auto distance = [&](size_t k) {
        const ModuleInfo& m = modules_[k];
        if (time_ns < m.record.time_ns) return m.record.time_ns - time_ns;
        return time_ns - m.unload_ns;
      };
      if (distance(i) < distance(fallback)) fallback = i;
    }
  }
  return live != kNone ? live : fallback;
}

}  // namespace inprof::symbolicate
