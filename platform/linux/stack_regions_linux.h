// The process's readable and writable mappings, from /proc/self/maps. The signal handler uses
// this table (read-only, prepared by the sampler outside the handler) to learn which memory
// around a thread's SP is its stack, so the copy never reads an unmapped page.
#ifndef INPROF_PLATFORM_LINUX_STACK_REGIONS_LINUX_H_
#define INPROF_PLATFORM_LINUX_STACK_REGIONS_LINUX_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string_view>
#include <vector>

namespace inprof::internal {

struct StackRegion {
  uint64_t begin = 0;
  uint64_t end = 0;
  bool main_stack = false;  // "[stack]": the main thread's stack, never unmapped
  // Right above an inaccessible mapping: laid out as a thread's stack over its guard page (glibc,
  // musl), though any mapping may happen to be. Known from a listing only: a query does not ask
  // (a second system call per new thread's first copy, for what no copy uses).
  bool guarded = false;
};

// Parses the text of /proc/<pid>/maps, keeping readable+writable mappings, sorted by address.
std::vector<StackRegion> parse_stack_regions(std::string_view maps);
// Reads /proc/self/maps; false if it cannot.
bool read_stack_regions(std::vector<StackRegion>* regions);

// The one mapping holding an address, asked of the kernel (PROCMAP_QUERY, Linux 6.11): one
// system call, where /proc/self/maps of a process with 10,000 threads is 1.5 MB of text to read
// for each new thread's stack. kUnsupported where the kernel has no such query (then read the
// table); kNotFound where no readable and writable mapping holds it.
enum class RegionQuery { kFound, kNotFound, kUnsupported };
RegionQuery query_stack_region(uint64_t address, StackRegion* out);
// The sampler's table of the mappings, by address: filled by a read of /proc/self/maps, then one
// mapping at a time as query_stack_region() finds them (a map: 10,000 new threads' stacks
// inserted into a sorted array moved it whole each time).
class StackRegionTable {
 public:
  // Replaces the table with what /proc/self/maps says now; false (the table kept) if it cannot.
  bool read();
  // The entry holding `address`, or null.
  const StackRegion* find(uint64_t address) const;
  // Puts `region` in place of every entry it overlaps (an older mapping there).
  void insert(const StackRegion& region);
  size_t size() const { return by_begin_.size(); }

 private:
  std::map<uint64_t, StackRegion> by_begin_;
};

// SUSPENDED-safe: binary search, no allocation. Null if no region holds `address`.
const StackRegion* find_stack_region(const StackRegion* regions, size_t count, uint64_t address);

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_STACK_REGIONS_LINUX_H_
