// Interposes the malloc family for this executable (and the libraries it loads, which bind to
// the first definition). Counting is per thread, so the sampler's allocations are told apart
// from those of the threads it samples.
#include "counting_allocator.h"

#include <cstddef>

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
}

namespace {

// Plain TLS words, zero-initialised: no constructor runs, so malloc may touch them at any time.
thread_local bool t_counting = false;
thread_local uint64_t t_allocations = 0;

inline void note() {
  if (t_counting) ++t_allocations;
}

}  // namespace

extern "C" {

void* malloc(size_t n) {
  note();
  return __libc_malloc(n);
}
void* calloc(size_t count, size_t n) {
  note();
  return __libc_calloc(count, n);
}
void* realloc(void* p, size_t n) {
  note();
  return __libc_realloc(p, n);
}
void* memalign(size_t alignment, size_t n) {
  note();
  return __libc_memalign(alignment, n);
}
void* aligned_alloc(size_t alignment, size_t n) {
  note();
  return __libc_memalign(alignment, n);
}
int posix_memalign(void** out, size_t alignment, size_t n) {
  note();
  void* p = __libc_memalign(alignment, n);
  if (p == nullptr) return 12;  // ENOMEM
  *out = p;
  return 0;
}

}  // extern "C"

namespace inprof::testing {

CountAllocations::CountAllocations() : start_(t_allocations) { t_counting = true; }
CountAllocations::~CountAllocations() { t_counting = false; }
uint64_t CountAllocations::count() const { return t_allocations - start_; }

}  // namespace inprof::testing
