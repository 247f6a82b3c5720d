// The reader's side of format version 2's compact samples: the stacks and thread slots a chunk
// has defined, which turn its sample batch back into whole samples and repeats. Every chunk
// starts empty, so a lost chunk takes only its own samples with it.
#ifndef INPROF_LIB_DUMP_CHUNK_SAMPLES_H_
#define INPROF_LIB_DUMP_CHUNK_SAMPLES_H_

#include <cstdint>
#include <vector>

#include "dump/dump_reader.h"
#include "dump/dump_records.h"

namespace inprof::internal {

class ChunkSamples {
 public:
  void start_chunk();
  // A stack record: the chunk's next stack. False if malformed or beyond the chunk's limits.
  bool add_stack(ByteReader& r);
  // A sample batch: delivers its samples and repeats in order, counting them in `delivered`.
  // False at the first malformed entry or reference to what the chunk has not defined.
  bool read_batch(ByteReader& r, DumpVisitor& visitor, uint64_t& delivered);

 private:
  std::vector<SampleRecord> stacks_;  // [0, stack_count_) are this chunk's; the rest is reused
  size_t stack_count_ = 0;
  size_t frame_count_ = 0;
  std::vector<uint64_t> threads_;  // tid by slot
  uint64_t next_key_ = 1;          // stack keys are unique across chunks
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_DUMP_CHUNK_SAMPLES_H_
