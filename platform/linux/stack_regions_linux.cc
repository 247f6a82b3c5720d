#include "stack_regions_linux.h"

#include <charconv>
#include <string>

#include "file_util_linux.h"

namespace inprof::internal {
namespace {

bool parse_hex(std::string_view s, uint64_t* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

std::vector<StackRegion> parse_stack_regions(std::string_view maps) {
  std::vector<StackRegion> regions;
  uint64_t inaccessible_end = 0;  // of the last "---p" mapping
  while (!maps.empty()) {
    size_t eol = maps.find('\n');
    std::string_view line = maps.substr(0, eol);
    maps = eol == std::string_view::npos ? std::string_view() : maps.substr(eol + 1);
    // "begin-end perms offset dev inode   path"
    size_t dash = line.find('-');
    size_t space = line.find(' ');
    if (dash == std::string_view::npos || space == std::string_view::npos || dash > space ||
        line.size() < space + 5) {
      continue;
    }
    StackRegion r;
    if (!parse_hex(line.substr(0, dash), &r.begin) ||
        !parse_hex(line.substr(dash + 1, space - dash - 1), &r.end) || r.begin >= r.end) {
      continue;
    }
    std::string_view perms = line.substr(space + 1, 4);
    if (perms.starts_with("---")) inaccessible_end = r.end;
    if (perms[0] != 'r' || perms[1] != 'w') continue;
    r.main_stack = line.ends_with("[stack]");
    r.guarded = inaccessible_end == r.begin && !line.ends_with("[heap]");
    regions.push_back(r);
  }
  return regions;
}

bool read_stack_regions(std::vector<StackRegion>* regions) {
  std::string maps;
  if (!read_small_file("/proc/self/maps", &maps, 64u << 20)) return false;
  *regions = parse_stack_regions(maps);
  return true;
}

const StackRegion* find_stack_region(const StackRegion* regions, size_t count, uint64_t address) {
  size_t lo = 0, hi = count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (regions[mid].end <= address) {
      lo = mid + 1;
    } else if (regions[mid].begin > address) {
      hi = mid;
    } else {
      return &regions[mid];
    }
  }
  return nullptr;
}

}  // namespace inprof::internal
