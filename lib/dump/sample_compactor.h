// Writes samples and repeats, which arrive whole as the sampler encoded them, in the compact
// form of dump format version 2: each distinct stack once per chunk (a stack record), and the
// chunk's samples together in one sample batch, column by column (threads, times, CPU deltas,
// stacks: like values side by side compress far better than interleaved records). Thread ids
// become small per-chunk slots; times and CPU deltas are in µs, times as differences from the
// batch's previous entry (whatever its thread: a tick samples every thread within a few µs).
// Everything a chunk's samples refer to is in that chunk, so a reader loses only the chunks it
// cannot read. Runs on the dump writer's thread and may allocate.
#ifndef INPROF_LIB_DUMP_SAMPLE_COMPACTOR_H_
#define INPROF_LIB_DUMP_SAMPLE_COMPACTOR_H_

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "dump/dump_records.h"
#include "dump/stack_table.h"
#include "memory/large_alloc.h"

namespace inprof::internal {

class SampleCompactor {
 public:
  enum class Result {
    kAdded,      // taken into the batch (a new stack's record went to the chunk)
    kChunkFull,  // the chunk's tables are full: nothing was taken; start a new chunk and retry
    kMalformed,  // not a sample payload: nothing was taken (the caller keeps it whole)
  };
  // `type` is kSample or kSampleRepeat; `payload` as encode_sample / encode wrote it.
  Result add(RecordType type, std::span<const uint8_t> payload, ByteBuffer& chunk);
  // Bytes held for the batch, not yet in the chunk.
  size_t pending_bytes() const;
  // Appends the batch (if any) to the chunk and starts an empty one.
  void end_batch(ByteBuffer& chunk);
  // Called when the chunk was written out: the next one starts with empty tables.
  void start_chunk();
  // The thread ended: its CPU-time remainder is forgotten (bounds the per-thread state).
  void thread_ended(uint64_t tid) { threads_.erase(tid); }

 private:
  struct ThreadState {
    uint64_t chunk = 0;           // the chunk whose slot below is valid (generation)
    uint64_t slot = 0;            // its index among the chunk's threads
    uint64_t cpu_ns = 0;          // its CPU time so far, as the sum of the deltas seen
    uint64_t cpu_written_us = 0;  // the part of it written so far, in µs
  };
  // The batch's columns (FORMAT.md): thread, time, CPU delta, stack.
  enum Column { kThreadColumn, kTimeColumn, kCpuColumn, kStackColumn, kColumns };

  StackTable stacks_;
  std::unordered_map<uint64_t, ThreadState> threads_;
  uint64_t chunk_ = 1;
  uint64_t threads_in_chunk_ = 0;
  ByteBuffer columns_[kColumns];
  uint64_t batch_count_ = 0;
  uint64_t batch_time_us_ = 0;  // the time of the batch's previous entry
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_DUMP_SAMPLE_COMPACTOR_H_
