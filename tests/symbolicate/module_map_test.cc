// ModuleMap finds modules through an index by start address; its answers must be those of the
// rule it documents, checked here against a plain scan of every module on random layouts with
// overlaps, reloads at the same address and unloads.
#include "symbolize/module_map.h"

#include <gtest/gtest.h>

#include <random>

namespace {

using inprof::symbolicate::kNever;
using inprof::symbolicate::ModuleInfo;
using inprof::symbolicate::ModuleMap;

// The rule, by scanning: a live module (loaded at or before the time, not unloaded before it),
// the most recently loaded one among several (the later one on a tie); otherwise the module
// whose lifetime is nearest to the time (the first one on a tie); kNone if none contains it.
size_t find_by_scan(const std::vector<ModuleInfo>& modules, uint64_t addr, uint64_t time) {
  size_t live = ModuleMap::kNone, fallback = ModuleMap::kNone;
  auto distance = [&](size_t j) {
    const ModuleInfo& m = modules[j];
    return time < m.record.time_ns ? m.record.time_ns - time : time - m.unload_ns;
  };
  for (size_t i = 0; i < modules.size(); ++i) {
    const auto& r = modules[i].record;
    if (addr < r.start || addr >= r.end) continue;
    if (r.time_ns <= time && time <= modules[i].unload_ns) {
      if (live == ModuleMap::kNone || r.time_ns >= modules[live].record.time_ns) live = i;
    } else if (fallback == ModuleMap::kNone || distance(i) < distance(fallback)) {
      fallback = i;
    }
  }
  return live != ModuleMap::kNone ? live : fallback;
}

TEST(ModuleMap, IndexAnswersAsAScanOfEveryModule) {
  std::mt19937_64 rng(12345);
  for (int layout = 0; layout < 200; ++layout) {
    std::vector<ModuleInfo> modules(1 + rng() % 40);
    for (ModuleInfo& m : modules) {
      // Few distinct bases so that modules overlap and reload at one address; some very large.
      m.record.start = 0x10000 * (rng() % 8);
      m.record.end = m.record.start + (rng() % 5 == 0 ? 0x100000 : 0x1000 * (1 + rng() % 24));
      m.record.time_ns = rng() % 1000;
      m.unload_ns = rng() % 3 == 0 ? m.record.time_ns + rng() % 500 : kNever;
    }
    ModuleMap map(modules);
    for (int q = 0; q < 300; ++q) {
      const uint64_t addr = rng() % 0x120000, time = rng() % 1600;
      ASSERT_EQ(map.find(addr, time), find_by_scan(modules, addr, time))
          << "layout " << layout << " address " << addr << " time " << time;
    }
  }
}

TEST(ModuleMap, ManyModulesOverOneAddress) {
  // More overlapping mappings than the lookup keeps on its stack.
  std::vector<ModuleInfo> modules(40);
  for (size_t i = 0; i < modules.size(); ++i) {
    modules[i].record.start = 0x1000;
    modules[i].record.end = 0x2000 + i;
    modules[i].record.time_ns = i * 10;
    modules[i].unload_ns = i * 10 + 5;
  }
  ModuleMap map(modules);
  EXPECT_EQ(map.find(0x1800, 12), 1u);     // live
  EXPECT_EQ(map.find(0x1800, 1000), 39u);  // nearest lifetime
  EXPECT_EQ(map.find(0x0fff, 12), ModuleMap::kNone);
  EXPECT_EQ(map.find(0x2000 + 39, 12), ModuleMap::kNone);
  for (uint64_t time = 0; time < 420; time += 3) {
    EXPECT_EQ(map.find(0x1800, time), find_by_scan(modules, 0x1800, time)) << time;
  }
}

}  // namespace
