// The distinct stacks of the chunk being written, each kept as its encoded bytes, so that a
// sample whose stack the chunk already holds is written as a reference to it. It lives on the
// dump writer's thread (it allocates; the sampler never touches it) and is bounded: at most
// kMaxStacksPerChunk stacks and kMaxStackFramesPerChunk frames, after which the writer starts a
// new chunk and clears it.
#ifndef INPROF_LIB_DUMP_STACK_TABLE_H_
#define INPROF_LIB_DUMP_STACK_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "memory/large_alloc.h"

namespace inprof::internal {

class StackTable {
 public:
  struct Found {
    uint32_t id = 0;     // ids count from 0 in the order stacks were added
    bool added = false;  // the stack is new: the caller writes its definition
    bool full = false;   // the stack is new and the table cannot take it (nothing changed)
  };
  // `stack` is an encoded stack (FORMAT.md) holding `frame_count` frames.
  Found find_or_add(std::span<const uint8_t> stack, size_t frame_count);
  // Forgets every stack (a new chunk); keeps the memory for the next one.
  void clear();
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t hash;
    uint32_t offset;  // into bytes_
    uint32_t size;
  };
  void grow_slots();

  // Large for a long profile: from large_alloc (large_alloc.h).
  ByteBuffer bytes_;             // every stack's encoding, back to back
  LargeVector<Entry> entries_;   // by id
  LargeVector<uint32_t> slots_;  // open addressing, power-of-two size: entry index + 1, 0 empty
  size_t frames_ = 0;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_DUMP_STACK_TABLE_H_
