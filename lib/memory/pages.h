// Pages straight from the OS, for the profiler's own heap (platform/<os>/pages_<os>.cc).
#ifndef INPROF_LIB_MEMORY_PAGES_H_
#define INPROF_LIB_MEMORY_PAGES_H_

#include <cstddef>

namespace inprof::internal {

// `bytes` (a multiple of the page size) of zero-filled read-write memory whose address is a
// multiple of `alignment` (a power of two, at least the page size); null when refused.
void* map_aligned_pages(size_t bytes, size_t alignment);
void unmap_pages(void* first, size_t bytes);
size_t page_bytes();

}  // namespace inprof::internal

#endif  // INPROF_LIB_MEMORY_PAGES_H_
