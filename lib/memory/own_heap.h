// The memory of the profiler's own threads (sampler, writer, triggers): pages mapped for the
// profiler, never the program's malloc. A thread's first malloc makes glibc give it an arena of
// its own (64 MiB of address space each, never returned): two profiler threads added 128 MiB to
// a program that has `ulimit -v` to respect, and took from the arenas its own threads would have
// had (issue 39, item 9). On Linux, libinprof.so's operator new sends the profiler's threads here
// (platform/linux/operator_new_linux.cc); the program's threads keep malloc.
//
// Small blocks (up to kOwnHeapLargestSmall) come from 64 KiB chunks of one size class each,
// which are kept for reuse; larger ones are mapped alone and unmapped when freed. Every chunk and
// mapping is aligned to 64 KiB and listed in a fixed table, so that a block is recognised as ours
// from its address alone, without reading memory around it (a free may be given malloc's blocks).
// Thread-safe; allocating takes a lock, recognising a block does not.
#ifndef INPROF_LIB_MEMORY_OWN_HEAP_H_
#define INPROF_LIB_MEMORY_OWN_HEAP_H_

#include <cstddef>

namespace inprof::internal {

inline constexpr size_t kOwnHeapChunkBytes = 64 << 10;
inline constexpr size_t kOwnHeapLargestSmall = 16 << 10;

// At least `bytes`, aligned to `alignment` (a power of two up to kOwnHeapChunkBytes); null when
// out of memory. Not zero-filled.
void* own_heap_allocate(size_t bytes, size_t alignment);

// Whether `block` came from own_heap_allocate (and is not yet released). Lock-free.
bool own_heap_owns(const void* block);

// Gives `block` back; false (and nothing done) when it is not the own heap's.
bool own_heap_release(void* block);

// fork(): the heap's lock taken last before it and given back first after, in both processes (a
// child must not inherit it held by a thread it does not have).
void own_heap_hold_for_fork();
void own_heap_release_after_fork();

// Address space the heap holds now (chunks kept for reuse included), for tests and benchmarks.
size_t own_heap_mapped_bytes();

}  // namespace inprof::internal

#endif  // INPROF_LIB_MEMORY_OWN_HEAP_H_
