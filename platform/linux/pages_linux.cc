#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

#include "memory/pages.h"

namespace inprof::internal {

size_t page_bytes() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

void* map_aligned_pages(size_t bytes, size_t alignment) {
  // Mapped with room to spare, then the unaligned head and the tail given back: the address space
  // kept is exactly `bytes`.
  const size_t spare = alignment > page_bytes() ? alignment : 0;
  if (bytes > SIZE_MAX - spare) return nullptr;
  void* m =
      mmap(nullptr, bytes + spare, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(m);
  const uintptr_t aligned = spare ? (start + alignment - 1) & ~(uintptr_t{alignment} - 1) : start;
  if (aligned > start) munmap(m, aligned - start);
  const uintptr_t end = start + bytes + spare;
  if (end > aligned + bytes)
    munmap(reinterpret_cast<void*>(aligned + bytes), end - aligned - bytes);
  return reinterpret_cast<void*>(aligned);
}

void unmap_pages(void* first, size_t bytes) { munmap(first, bytes); }

}  // namespace inprof::internal
