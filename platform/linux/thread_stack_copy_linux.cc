#include "thread_stack_copy_linux.h"

#include <errno.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "seccomp_state_linux.h"

namespace inprof::internal {
namespace {

// Set once the kernel refused process_vm_readv (ENOSYS, EPERM): no point asking every sample.
std::atomic<bool> g_vm_read_refused{false};

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
// redzones; the attributes keep the compiler from turning the loop back into memcpy (each
// compiler's own way of saying so: clang has no optimize attribute).
#if defined(__clang__)
#define INPROF_NOT_MEMCPY no_builtin("memcpy")
#else
#define INPROF_NOT_MEMCPY optimize("no-tree-loop-distribute-patterns")
#endif
__attribute__((no_sanitize("address", "thread", "undefined"), INPROF_NOT_MEMCPY)) void copy_words(
    uint8_t* dst, const uint8_t* src, size_t n) {
  size_t words = n / 8;
  auto* d = reinterpret_cast<uint64_t*>(dst);
  auto* s = reinterpret_cast<const volatile uint64_t*>(src);
  for (size_t i = 0; i < words; ++i) d[i] = s[i];
  for (size_t i = words * 8; i < n; ++i) dst[i] = src[i];
}
#undef INPROF_NOT_MEMCPY

// The kernel copies [address, address + n) and stops at the first unmapped page. Bytes copied,
// or -1 if the call itself is refused.
long kernel_copy(int pid, uint8_t* dst, uint64_t address, size_t n) {
  if (g_vm_read_refused.load(std::memory_order_relaxed)) return -1;
  iovec local{dst, n};
  iovec remote{reinterpret_cast<void*>(address), n};
  const long got = syscall(SYS_process_vm_readv, pid, &local, 1, &remote, 1, 0);
  if (got >= 0) return got;
  if (errno == ENOSYS || errno == EPERM) {
    g_vm_read_refused.store(true, std::memory_order_relaxed);
    return -1;
  }
  return 0;  // EFAULT: not even SP's page is mapped
}

// The bytes to copy from SP, and whether plain loads over them cannot fault.
struct Span {
  size_t bytes;
  bool proven;
  bool truncated;  // the stack goes on above
};

Span span_above(const StackSnapshot& out, const StackRegion* region, bool own_thread) {
  const uint64_t sp = out.sp();
  if (region == nullptr || sp < region->begin || sp >= region->end) {
    return {out.capacity, false, true};
  }
  const StackTop top =
      own_thread ? stack_top(*region, sp) : StackTop{region->end, region->main_stack};
  const uint64_t available = top.address - sp;
  return {static_cast<size_t>(std::min<uint64_t>(available, out.capacity)), top.proven,
          available > out.capacity};
}

void reset(StackSnapshot* out) {
  out->stack_start = out->sp();
  out->stack_size = 0;
  out->stack_found = false;
  out->stack_truncated = false;
}

}  // namespace

size_t stack_bytes_above(const StackRegion& region, uint64_t sp) {
  const uint64_t top = stack_top(region, sp).address;
  return top > sp ? static_cast<size_t>(top - sp) : 0;
}

void copy_own_stack(StackSnapshot* out, const StackRegion* region, int pid) {
  reset(out);
  const Span span = span_above(*out, region, /*own_thread=*/true);
  if (span.bytes == 0) return;
  const long got = kernel_copy(pid, out->buffer, out->sp(), span.bytes);
  if (got >= 0) {
    out->stack_size = static_cast<size_t>(got);
    out->stack_truncated = span.truncated || out->stack_size < span.bytes;
  } else if (span.proven) {
    copy_words(out->buffer, reinterpret_cast<const uint8_t*>(out->sp()), span.bytes);
    out->stack_size = span.bytes;
    out->stack_truncated = span.truncated;
  }
  out->stack_found = out->stack_size > 0;
}

void copy_other_stack(StackSnapshot* out, const StackRegion* region, int pid) {
  reset(out);
  const Span span = span_above(*out, region, /*own_thread=*/false);
  if (span.bytes == 0 || seccomp_filtered()) return;  // under a filter the call may be fatal
  const long got = kernel_copy(pid, out->buffer, out->sp(), span.bytes);
  if (got <= 0) return;
  out->stack_size = static_cast<size_t>(got);
  out->stack_truncated = span.truncated || out->stack_size < span.bytes;
  out->stack_found = true;
}

}  // namespace inprof::internal
