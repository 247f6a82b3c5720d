#include "symbolize/elf/unit_ranges.h"

#include <algorithm>
#include <cstddef>
#include <unordered_set>

namespace inprof::symbolicate {

std::vector<UnitRange> ranges_of_units_without_aranges(Dwarf* dwarf) {
  // The units the aranges describe; an error reading them is as if there were none.
  std::unordered_set<uint64_t> described;
  Dwarf_Aranges* aranges = nullptr;
  size_t count = 0;
  if (dwarf_getaranges(dwarf, &aranges, &count) != 0) count = 0;
  for (size_t i = 0; i < count; ++i) {
    Dwarf_Off unit = 0;
    Dwarf_Arange* arange = dwarf_onearange(aranges, i);
    if (arange && dwarf_getarangeinfo(arange, nullptr, nullptr, &unit) == 0) described.insert(unit);
  }
  std::vector<UnitRange> all;
  Dwarf_CU* cu = nullptr;
  Dwarf_Die cudie;
  while (dwarf_get_units(dwarf, cu, &cu, nullptr, nullptr, &cudie, nullptr) == 0) {
    const uint64_t unit = dwarf_dieoffset(&cudie);
    if (described.count(unit)) continue;
    Dwarf_Addr base = 0, start = 0, end = 0;
    ptrdiff_t offset = 0;
    while ((offset = dwarf_ranges(&cudie, offset, &base, &start, &end)) > 0) {
      if (end > start) all.push_back({start, end, unit});
    }
  }
  std::sort(all.begin(), all.end(), [](const UnitRange& a, const UnitRange& b) {
    return a.addr != b.addr ? a.addr < b.addr : a.unit < b.unit;
  });
  std::vector<UnitRange> out;
  for (UnitRange r : all) {
    if (!out.empty()) r.addr = std::max(r.addr, out.back().end);
    if (r.addr >= r.end) continue;
    if (!out.empty() && out.back().end == r.addr && out.back().unit == r.unit) {
      out.back().end = r.end;  // one unit's adjacent functions: one range
    } else {
      out.push_back(r);
    }
  }
  return out;
}

uint64_t unit_holding(const std::vector<UnitRange>& ranges, uint64_t pc) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), pc,
                             [](uint64_t a, const UnitRange& r) { return a < r.addr; });
  if (it == ranges.begin() || pc >= (it - 1)->end) return 0;
  return (it - 1)->unit;
}

}  // namespace inprof::symbolicate
