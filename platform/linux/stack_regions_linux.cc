#include "stack_regions_linux.h"

#include <errno.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <iterator>
#include <string>

#include "file_util_linux.h"

namespace inprof::internal {
namespace {

bool parse_hex(std::string_view s, uint64_t* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// The kernel's PROCMAP_QUERY (uapi linux/fs.h, Linux 6.11), declared here: Debian 12's headers
// predate it.
struct ProcmapQuery {
  uint64_t size;
  uint64_t query_flags;
  uint64_t query_addr;
  uint64_t vma_start;
  uint64_t vma_end;
  uint64_t vma_flags;
  uint64_t vma_page_size;
  uint64_t vma_offset;
  uint64_t inode;
  uint32_t dev_major;
  uint32_t dev_minor;
  uint32_t vma_name_size;
  uint32_t build_id_size;
  uint64_t vma_name_addr;
  uint64_t build_id_addr;
};
static_assert(sizeof(ProcmapQuery) == 104);
constexpr unsigned long kProcmapQuery = _IOWR('f', 17, ProcmapQuery);
constexpr uint64_t kVmaReadable = 0x01;
constexpr uint64_t kVmaWritable = 0x02;

std::atomic<bool> g_query_unsupported{false};

// The covering mapping of `address`, its name into `name` (if given): 0, or the errno.
int ask_mapping(int maps, uint64_t address, ProcmapQuery* q, char* name, uint32_t name_size) {
  std::memset(q, 0, sizeof(*q));
  q->size = sizeof(*q);
  q->query_addr = address;
  if (name != nullptr) {
    q->vma_name_addr = reinterpret_cast<uint64_t>(name);
    q->vma_name_size = name_size;
  }
  return ioctl(maps, kProcmapQuery, q) == 0 ? 0 : errno;
}

// /proc/self/maps for the queries: kept open on a descriptor table of the calling thread's own
// (nothing of the program's is held), else opened for the one query.
class MapsDescriptor {
 public:
  MapsDescriptor() {
    __attribute__((tls_model("initial-exec"))) static thread_local int t_kept = -2;
    if (on_private_descriptor_table()) {
      if (t_kept == -2) t_kept = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
      fd_ = t_kept;
      return;
    }
    file_ = OwnedFd("/proc/self/maps", O_RDONLY);
    fd_ = file_.checked_fd();
  }
  int fd() const { return fd_; }

 private:
  OwnedFd file_;
  int fd_ = -1;
};

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

RegionQuery query_stack_region(uint64_t address, StackRegion* out) {
  if (g_query_unsupported.load(std::memory_order_relaxed)) return RegionQuery::kUnsupported;
  MapsDescriptor maps;
  if (maps.fd() < 0) return RegionQuery::kUnsupported;
  ProcmapQuery q;
  char name[16];  // enough to tell "[stack]"; a longer name is a file's, not a stack
  int error = ask_mapping(maps.fd(), address, &q, name, sizeof(name));
  if (error == ENAMETOOLONG) error = ask_mapping(maps.fd(), address, &q, nullptr, 0);
  const bool named = error == 0 && q.vma_name_size != 0;
  if (error == ENOENT) return RegionQuery::kNotFound;
  if (error != 0) {
    // ENOTTY or EINVAL: no such query here. Anything else: not asked again either.
    g_query_unsupported.store(true, std::memory_order_relaxed);
    return RegionQuery::kUnsupported;
  }
  if ((q.vma_flags & kVmaReadable) == 0 || (q.vma_flags & kVmaWritable) == 0) {
    return RegionQuery::kNotFound;  // not a mapping the table keeps
  }
  StackRegion region;
  region.begin = q.vma_start;
  region.end = q.vma_end;
  const std::string_view shown = named ? std::string_view(name) : std::string_view();
  region.main_stack = shown == "[stack]";
  *out = region;
  return RegionQuery::kFound;
}

bool StackRegionTable::read() {
  std::vector<StackRegion> regions;
  if (!read_stack_regions(&regions)) return false;
  by_begin_.clear();
  for (const StackRegion& r : regions) by_begin_.emplace_hint(by_begin_.end(), r.begin, r);
  return true;
}

const StackRegion* StackRegionTable::find(uint64_t address) const {
  auto it = by_begin_.upper_bound(address);  // the first beginning above it
  if (it == by_begin_.begin()) return nullptr;
  --it;
  return address < it->second.end ? &it->second : nullptr;
}

void StackRegionTable::insert(const StackRegion& region) {
  auto first = by_begin_.lower_bound(region.begin);
  // One beginning below may reach into it.
  if (first != by_begin_.begin() && std::prev(first)->second.end > region.begin) --first;
  auto last = first;
  while (last != by_begin_.end() && last->first < region.end) ++last;
  by_begin_.erase(first, last);
  by_begin_.emplace(region.begin, region);
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
