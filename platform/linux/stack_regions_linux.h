// The process's readable and writable mappings, from /proc/self/maps. The signal handler uses
// this table (read-only, prepared by the sampler outside the handler) to learn which memory
// around a thread's SP is its stack, so the copy never reads an unmapped page.
#ifndef INPROF_PLATFORM_LINUX_STACK_REGIONS_LINUX_H_
#define INPROF_PLATFORM_LINUX_STACK_REGIONS_LINUX_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace inprof::internal {

struct StackRegion {
  uint64_t begin = 0;
  uint64_t end = 0;
  bool main_stack = false;  // "[stack]": the main thread's stack, never unmapped
  // Right above an inaccessible mapping: laid out as a thread's stack over its guard page (glibc,
  // musl), though any mapping may happen to be.
  bool guarded = false;
};

// Parses the text of /proc/<pid>/maps, keeping readable+writable mappings, sorted by address.
std::vector<StackRegion> parse_stack_regions(std::string_view maps);
// Reads /proc/self/maps; false if it cannot.
bool read_stack_regions(std::vector<StackRegion>* regions);

// SUSPENDED-safe: binary search, no allocation. Null if no region holds `address`.
const StackRegion* find_stack_region(const StackRegion* regions, size_t count, uint64_t address);

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_STACK_REGIONS_LINUX_H_
