#include "small_mappings_linux.h"

#include <atomic>
#include <vector>

#include "session/process_info.h"
#include "stack_regions_linux.h"

namespace inprof::internal {
namespace {

// Sorted by address, under a sequence lock (odd: being written). Static: the handler may read it
// at any time. 2,048 entries (32 KiB): a process with more small writable mappings (each loaded
// library has one or two) keeps the lowest; a thread whose stack is left out is judged at its
// first sample instead.
constexpr uint32_t kCapacity = 2048;
std::atomic<uint32_t> g_sequence{0};
std::atomic<uint32_t> g_count{0};
std::atomic<uint64_t> g_begin[kCapacity];
std::atomic<uint64_t> g_end[kCapacity];

// The sampler's: a read that found small stacks is taken as the answer for a second (10,000
// threads found running as they start each asked for one, and each read was 1.5 MB of text).
// Not paced otherwise: a timer refused until the next read left a thread started beside others
// unsampled for hundreds of milliseconds where reads are slow (under qemu).
uint64_t g_small_found_until_ns = 0;
constexpr uint64_t kSmallStacksKeptNs = 1000000000;

}  // namespace

bool refresh_small_mappings(uint64_t smaller_than) {
  if (monotonic_ns() < g_small_found_until_ns) return true;
  std::vector<StackRegion> regions;
  const bool read = read_stack_regions(&regions);
  if (!read) return true;  // unknown: as if there were
  const uint32_t sequence = g_sequence.load(std::memory_order_relaxed);
  g_sequence.store(sequence + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  uint32_t count = 0;
  bool small_stack = false;
  for (const StackRegion& r : regions) {
    if (r.main_stack || r.end - r.begin >= smaller_than) continue;
    small_stack = small_stack || r.guarded;
    if (count == kCapacity) break;
    g_begin[count].store(r.begin, std::memory_order_relaxed);
    g_end[count].store(r.end, std::memory_order_relaxed);
    ++count;
  }
  g_count.store(count, std::memory_order_relaxed);
  g_sequence.store(sequence + 2, std::memory_order_release);
  if (small_stack) g_small_found_until_ns = monotonic_ns() + kSmallStacksKeptNs;
  return small_stack;
}

bool in_small_mapping(uint64_t address) {
  const uint32_t before = g_sequence.load(std::memory_order_acquire);
  if (before & 1) return false;
  // The last entry beginning at or below `address` (binary search).
  uint32_t low = 0, high = g_count.load(std::memory_order_relaxed);
  if (high > kCapacity) return false;
  while (low < high) {
    const uint32_t middle = low + (high - low) / 2;
    if (g_begin[middle].load(std::memory_order_relaxed) <= address) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  const bool inside = low > 0 && address < g_end[low - 1].load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  return inside && g_sequence.load(std::memory_order_relaxed) == before;
}

}  // namespace inprof::internal
