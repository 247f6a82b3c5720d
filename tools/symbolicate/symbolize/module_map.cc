#include "symbolize/module_map.h"

#include <algorithm>
#include <iterator>

namespace inprof::symbolicate {

ModuleMap::ModuleMap(const std::vector<ModuleInfo>& modules) : modules_(modules) {
  for (const ModuleInfo& m : modules_) {
    thresholds_.push_back(m.record.time_ns);
    // Live while time <= unload time, so the set changes at unload + 1.
    if (m.unload_ns != kNever) thresholds_.push_back(m.unload_ns + 1);
  }
  std::sort(thresholds_.begin(), thresholds_.end());
  by_start_.resize(modules_.size());
  for (size_t i = 0; i < by_start_.size(); ++i) by_start_[i] = static_cast<uint32_t>(i);
  std::stable_sort(by_start_.begin(), by_start_.end(), [&](uint32_t a, uint32_t b) {
    return modules_[a].record.start < modules_[b].record.start;
  });
  uint64_t max_end = 0;
  for (uint32_t i : by_start_) {
    max_end = std::max(max_end, modules_[i].record.end);
    max_end_.push_back(max_end);
  }
}

size_t ModuleMap::epoch(uint64_t time_ns) const {
  return static_cast<size_t>(std::upper_bound(thresholds_.begin(), thresholds_.end(), time_ns) -
                             thresholds_.begin());
}

size_t ModuleMap::find(uint64_t addr, uint64_t time_ns) const {
  // The modules containing `addr`: among those starting at or below it, walking back until no
  // earlier one reaches it. Then the choice below, in the modules' own order.
  uint32_t found[16];
  size_t n = 0;
  std::vector<uint32_t> many;  // more than 16 overlapping mappings: unusual, but allowed
  auto k = static_cast<size_t>(
      std::upper_bound(by_start_.begin(), by_start_.end(), addr,
                       [&](uint64_t a, uint32_t i) { return a < modules_[i].record.start; }) -
      by_start_.begin());
  while (k-- > 0 && max_end_[k] > addr) {
    const uint32_t i = by_start_[k];
    if (addr >= modules_[i].record.end) continue;
    if (n < std::size(found)) {
      found[n++] = i;
    } else {
      if (many.empty()) many.assign(found, found + n);
      many.push_back(i);
    }
  }
  uint32_t* candidates = many.empty() ? found : many.data();
  if (!many.empty()) n = many.size();
  std::sort(candidates, candidates + n);

  size_t live = kNone;
  size_t fallback = kNone;
  for (size_t c = 0; c < n; ++c) {
    const size_t i = candidates[c];
    const internal::ModuleRecord& r = modules_[i].record;
    bool is_live = r.time_ns <= time_ns && time_ns <= modules_[i].unload_ns;
    // Among several candidates the most recently loaded wins.
    if (is_live) {
      if (live == kNone || r.time_ns >= modules_[live].record.time_ns) live = i;
    } else if (fallback == kNone) {
      fallback = i;
    } else {
      // Prefer the module whose lifetime is nearest to the sample time.
      auto distance = [&](size_t j) {
        const ModuleInfo& m = modules_[j];
        if (time_ns < m.record.time_ns) return m.record.time_ns - time_ns;
        return time_ns - m.unload_ns;
      };
      if (distance(i) < distance(fallback)) fallback = i;
    }
  }
  return live != kNone ? live : fallback;
}

}  // namespace inprof::symbolicate
