// Large blocks the profiler keeps for a while (buffers, caches, zstd's workspace) come straight
// from the kernel, never from malloc. glibc serves a block of at least its mmap threshold (128 KiB
// at start) with a mapping of its own and, when such a block is freed, raises the threshold for
// the whole process to the block's size (up to 32 MiB; the trim threshold follows at twice it).
// One such free by a profiler thread changes how the program's own later blocks are served and
// how often its heap is trimmed: a python benchmark profiled at 1 kHz had a quarter of its page
// faults (item 17 of "Invisible to the program it profiles"; tests/transparency/malloc_threshold).
// Small blocks come from operator new (malloc for the program's threads, libinprof.so's own heap
// for the profiler's): they never raise the threshold.
#ifndef INPROF_LIB_LARGE_ALLOC_H_
#define INPROF_LIB_LARGE_ALLOC_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

namespace inprof::internal {

// Blocks of this size or more are mapped by large_alloc itself (below glibc's lowest dynamic
// threshold, with a margin for malloc's own header).
inline constexpr size_t kLargeAllocBytes = 64 << 10;

// Zero-filled, aligned to 16 bytes; null when out of memory. Free with large_free only.
void* large_alloc(size_t bytes);
// The same, but mapped whatever the size (where the OS allows): for blocks a session keeps for its
// whole life, which must not grow a heap the program allocates from. Free with large_free.
void* mapped_alloc(size_t bytes);
void large_free(void* block);

struct LargeFree {
  void operator()(void* block) const { large_free(block); }
};

// A type whose value-initialised object is all zero bytes, which the zero-filled blocks above
// already are: nothing to construct. Writing the zeros again would touch every page of a mapped
// block at once (a 256 KiB stack buffer the sampler fills a few KiB of, a 320 KiB rule cache), a
// page fault each: most of what starting a session cost (benchmarks/start_stop_benchmark).
// Trivially default-constructible types qualify; a type with member initialisers that are all
// zero opts in by specialising this (and tests that T{} is all zero bytes).
template <class T>
inline constexpr bool kZeroBytesAreValueInitialized = std::is_trivially_default_constructible_v<T>;

template <class T>
T* value_initialize(T* first, size_t count) {
  if constexpr (!kZeroBytesAreValueInitialized<T>) {
    for (size_t i = 0; i < count; ++i) ::new (static_cast<void*>(first + i)) T();
  }
  return first;
}

// An array of `count` value-initialised T (for a trivially destructible T: no destructor runs).
template <class T>
struct LargeArrayDelete {
  void operator()(T* p) const { large_free(p); }
};
template <class T>
using LargeArray = std::unique_ptr<T[], LargeArrayDelete<T>>;

template <class T>
LargeArray<T> make_large_array(size_t count) {
  static_assert(std::is_trivially_destructible_v<T>, "large_free runs no destructor");
  void* block = large_alloc(count * sizeof(T));
  if (block == nullptr) throw std::bad_alloc();
  return LargeArray<T>(value_initialize(static_cast<T*>(block), count));
}

// The same, always mapped (mapped_alloc): for arrays a session keeps for its whole life, which must
// not grow the heap the program allocates from (see MappedVector below).
template <class T>
LargeArray<T> make_mapped_array(size_t count) {
  static_assert(std::is_trivially_destructible_v<T>, "large_free runs no destructor");
  if (count > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
  void* block = mapped_alloc(count * sizeof(T));
  if (block == nullptr) throw std::bad_alloc();
  return LargeArray<T>(value_initialize(static_cast<T*>(block), count));
}

// std::vector allocators. LargeVector, for buffers that may grow past kLargeAllocBytes (the dump
// writer's chunk, its stack table): small capacities from operator new, large ones from
// large_alloc (not zero-filled: the vector constructs its elements). MappedVector, for buffers a
// session makes once whatever their size (the sampler's frame and encoding buffers, tens of KiB):
// always mapped (mapped_alloc), so that starting the profiler grows no heap the program allocates
// from (a grown heap top serves the program's next large block, which malloc would otherwise
// have mapped: tests/transparency/malloc_threshold).
template <class T, bool kAlwaysMapped>
struct BlockAllocator {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = BlockAllocator<U, kAlwaysMapped>;
  };
  BlockAllocator() = default;
  template <class U>
  BlockAllocator(const BlockAllocator<U, kAlwaysMapped>&) {}
  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    if (!from_heap(n)) {
      void* block = kAlwaysMapped ? mapped_alloc(n * sizeof(T)) : large_alloc(n * sizeof(T));
      if (block == nullptr) throw std::bad_alloc();
      return static_cast<T*>(block);
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) {
    if (from_heap(n)) {
      ::operator delete(p);
    } else {
      large_free(p);
    }
  }
  template <class U>
  bool operator==(const BlockAllocator<U, kAlwaysMapped>&) const {
    return true;
  }

 private:
  static bool from_heap(size_t n) { return !kAlwaysMapped && n * sizeof(T) < kLargeAllocBytes; }
};
template <class T>
using LargeAllocator = BlockAllocator<T, false>;
template <class T>
using LargeVector = std::vector<T, LargeAllocator<T>>;
using ByteBuffer = LargeVector<uint8_t>;
template <class T>
using MappedAllocator = BlockAllocator<T, true>;
template <class T>
using MappedVector = std::vector<T, MappedAllocator<T>>;

// For libraries that take allocation callbacks (zstd's ZSTD_customMem).
void* large_alloc_callback(void* opaque, size_t bytes);
void large_free_callback(void* opaque, void* block);

}  // namespace inprof::internal

#endif  // INPROF_LIB_LARGE_ALLOC_H_
