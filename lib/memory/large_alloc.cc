#include "memory/large_alloc.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "memory/pages.h"

namespace inprof::internal {

namespace {

// Each block is preceded by this header (16 bytes: the block keeps malloc's alignment): how it was
// obtained and how large the whole allocation is.
struct Header {
  uint64_t total;  // bytes mapped, header included (0: from operator new)
  uint64_t magic;
};
constexpr uint64_t kMagic = 0x6c72676c6c6f6361ull;
static_assert(sizeof(Header) == 16);

}  // namespace

namespace {

void* allocate(size_t bytes, [[maybe_unused]] bool always_map) {
  if (bytes > SIZE_MAX - sizeof(Header) - 65536) return nullptr;
  const size_t want = bytes + sizeof(Header);
  Header* h = nullptr;
#if defined(__linux__)  // pages_linux.cc; elsewhere operator new serves every size
  if (always_map || bytes >= kLargeAllocBytes) {
    const size_t page = page_bytes();
    const size_t total = (want + page - 1) / page * page;
    void* m = map_aligned_pages(total, page);
    if (m == nullptr) return nullptr;
    h = static_cast<Header*>(m);  // zero-filled by the kernel
    h->total = total;
  }
#endif
  if (h == nullptr) {
    // operator new, not malloc: in libinprof.so the profiler's threads get their own heap's
    // (platform/linux/operator_new_linux.cc), never an arena of malloc's (zstd's 24 KiB
    // workspace, asked for by the writer, once took one: 64 MiB of the program's address space).
    h = static_cast<Header*>(::operator new(want, std::nothrow));
    if (h == nullptr) return nullptr;
    std::memset(h, 0, want);
  }
  h->magic = kMagic;
  return h + 1;
}

}  // namespace

void* large_alloc(size_t bytes) { return allocate(bytes, false); }
void* mapped_alloc(size_t bytes) { return allocate(bytes, true); }

void large_free(void* block) {
  if (block == nullptr) return;
  Header* h = static_cast<Header*>(block) - 1;
  if (h->magic != kMagic) std::abort();
  h->magic = 0;
#if defined(__linux__)
  if (h->total != 0) {
    unmap_pages(h, h->total);
    return;
  }
#endif
  ::operator delete(h);
}

void* large_alloc_callback(void*, size_t bytes) { return large_alloc(bytes); }
void large_free_callback(void*, void* block) { large_free(block); }

}  // namespace inprof::internal
