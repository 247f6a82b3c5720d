// When the writer ends a zstd chunk of the dump: shared by the session's writer, its JIT map copy
// and its captures.
#ifndef INPROF_LIB_SESSION_CHUNK_FLUSH_H_
#define INPROF_LIB_SESSION_CHUNK_FLUSH_H_

#include <cstddef>
#include <cstdint>

#include "dump/dump_writer.h"

namespace inprof::internal {

// The writer drains the ring at least this far apart, and at most kFlushPeriodNs apart: as
// rarely as the ring's filling allows, so that a session that records little (memory only, a
// program that sleeps) does not wake a thread 50 times a second (~0.25 ms of CPU a wake-up on
// the VM where this was measured). Between the two, the wait lets the ring fill to an eighth at the
// rate it filled since the previous drain; a sampler tick that finds it a quarter full wakes the
// writer at once.
inline constexpr uint64_t kMinDrainPeriodNs = 20000000;
inline constexpr size_t kFlushBytes = 1u << 20;        // uncompressed bytes per zstd frame
inline constexpr uint64_t kFlushPeriodNs = 500000000;  // and at least this often: a killed process
                                                       // loses at most this much

// Ends the chunk once it holds kFlushBytes: chunks stay small whatever arrives at once (a ring
// the writer fell behind on, a large JIT map), so a reader never needs a big zstd window.
inline Status flush_if_full(DumpWriter& dump) {
  return dump.pending_bytes() >= kFlushBytes ? dump.flush() : Status();
}

}  // namespace inprof::internal

#endif  // INPROF_LIB_SESSION_CHUNK_FLUSH_H_
