// The allocator a program would use without the allocation interposer: glibc's, or one the
// program brings in a library of its own (jemalloc, tcmalloc). The interposer must forward to it,
// not to glibc's, or profiling would change the program's allocator (its memory use, its speed,
// and a program that also calls that allocator's own API, mallocx/sdallocx say, would hand it
// glibc's blocks). Found once, at the interposer's first call, with dlsym(RTLD_NEXT).
#ifndef INPROF_PLATFORM_LINUX_NEXT_ALLOCATOR_LINUX_H_
#define INPROF_PLATFORM_LINUX_NEXT_ALLOCATOR_LINUX_H_

#include <cstddef>
#include <cstdint>

namespace inprof::internal {

enum class AllocatorRoute : uint8_t {
  kUnresolved,  // no call has come through yet
  kGlibc,       // glibc's: the __libc_* functions, and its chunk headers for the tags
  kForeign,     // another library's: everything through NextAllocator, no tags
};

// The next definitions of the malloc family. Where the foreign allocator leaves a function to
// glibc (jemalloc has no pvalloc), the interposer makes it of the foreign allocator's own
// functions instead, so that every block comes from and goes back to one allocator.
struct NextAllocator {
  void* (*malloc)(size_t) = nullptr;
  void (*free)(void*) = nullptr;
  void* (*calloc)(size_t, size_t) = nullptr;
  void* (*realloc)(void*, size_t) = nullptr;
  void* (*memalign)(size_t, size_t) = nullptr;
  int (*posix_memalign)(void**, size_t, size_t) = nullptr;
  void* (*aligned_alloc)(size_t, size_t) = nullptr;
  void* (*valloc)(size_t) = nullptr;
  void* (*pvalloc)(size_t) = nullptr;
  size_t (*usable_size)(void*) = nullptr;
};

// Looks the allocator up (once; other threads wait for the first). While the looking-up thread
// is inside dlsym, whatever it allocates comes from glibc and is remembered (bootstrap_block):
// with a foreign allocator such a block must go back to glibc. `interposer_code`: any address in
// the interposer (a malloc defined anywhere else comes before it in the lookup order).
AllocatorRoute resolve_next_allocator(const void* interposer_code);
// Whether this thread is the one looking the allocator up (its allocations: glibc's).
bool resolving_next_allocator();
const NextAllocator& next_allocator();

// Remembers a block of `size` bytes glibc made while the allocator was looked up; false when the
// table is full.
bool remember_bootstrap_block(void* block, size_t size);
// True (and forgotten) if `block` is one of those: the caller gives it back to glibc. `size`, if
// given, gets the size it was made with.
bool forget_bootstrap_block(void* block, size_t* size = nullptr);
// True if `block` is one of those (left remembered), with its size.
bool is_bootstrap_block(const void* block, size_t* size = nullptr);

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_NEXT_ALLOCATOR_LINUX_H_
