#include "thread_stack_copy_linux.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>

namespace inprof::internal {
namespace {

// Where the copy may end, and whether that end is known to be mapped all the way: the region is
// the main stack, or it ends at this thread's own descriptor (glibc puts it at the top of a
// thread's stack). A mapping merged with its neighbours in /proc/self/maps proves nothing.
struct StackTop {
  uint64_t address;
  bool proven;
};

StackTop stack_top(const StackRegion& region, uint64_t sp) {
  const auto self = reinterpret_cast<uint64_t>(pthread_self());
  if (!region.main_stack && self > sp && self <= region.end) return {self, true};
  return {region.end, region.main_stack};
}

// Plain word loop. Not memcpy: sanitizers intercept memcpy and would flag reads of stack
// redzones; the attributes keep the compiler from turning the loop back into memcpy.
__attribute__((no_sanitize("address", "thread", "undefined"),
               optimize("no-tree-loop-distribute-patterns"))) void
copy_words(uint8_t* dst, const uint8_t* src, size_t n) {
  size_t words = n / 8;
  auto* d = reinterpret_cast<uint64_t*>(dst);
  auto* s = reinterpret_cast<const volatile uint64_t*>(src);
  for (size_t i = 0; i < words; ++i) d[i] = s[i];
  for (size_t i = words * 8; i < n; ++i) dst[i] = src[i];
}

}  // namespace

size_t stack_bytes_above(const StackRegion& region, uint64_t sp) {
  const uint64_t top = stack_top(region, sp).address;
  return top > sp ? static_cast<size_t>(top - sp) : 0;
}

void copy_own_stack(StackSnapshot* out, const StackRegion* region, int pid) {
  const uint64_t sp = out->sp();
  out->stack_start = sp;
  out->stack_size = 0;
  out->stack_found = false;
  out->stack_truncated = false;
  if (region == nullptr || sp < region->begin || sp >= region->end) return;

  const StackTop top = stack_top(*region, sp);
  const uint64_t available = top.address - sp;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(available, out->capacity));
  out->stack_truncated = available > out->capacity;
  if (top.proven) {
    copy_words(out->buffer, reinterpret_cast<const uint8_t*>(sp), n);
    out->stack_size = n;
  } else {
    // The kernel copies for us and stops at the first unmapped page instead of faulting.
    iovec local{out->buffer, n};
    iovec remote{reinterpret_cast<void*>(sp), n};
    long got = syscall(SYS_process_vm_readv, pid, &local, 1, &remote, 1, 0);
    out->stack_size = got > 0 ? static_cast<size_t>(got) : 0;
    if (out->stack_size < n) out->stack_truncated = true;
  }
  out->stack_found = out->stack_size > 0;
}

}  // namespace inprof::internal
