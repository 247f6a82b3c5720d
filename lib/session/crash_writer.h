// Writes a flight recorder's contents from a crash handler: the kept metadata (process, modules,
// threads, declarations), every intact record of the ring, a last sample of the crashing thread
// and a marker at the crash, as a raw (uncompressed) dump that `symbolicate` reads.
//
// Everything it needs is allocated when the session starts; write() is async-signal-safe: no
// allocation, no lock, only atomic loads of memory that stays mapped, and the sink's raw writes.
#ifndef INPROF_LIB_CRASH_WRITER_H_
#define INPROF_LIB_CRASH_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "memory/large_alloc.h"
#include "session/metadata_queue.h"
#include "session/ring_buffer.h"

namespace inprof::internal {

// What a crash handler knows about the crash.
struct CrashReport {
  uint64_t tid = 0;
  uint64_t time_ns = 0;                // monotonic clock
  const char* signal_name = "signal";  // "SIGSEGV", ... (static storage)
  int code = 0;                        // si_code
  uint64_t address = 0;                // si_addr: the faulting address, where the signal has one
  // The crashing thread's stack: frames[0] is the exact program counter, then return addresses
  // found by a frame-pointer walk; candidates are code addresses near the stack pointer (see the
  // leaf fix-up in FORMAT.md).
  std::span<const uint64_t> frames;
  std::span<const uint64_t> leaf_candidates;  // words at SP + 8 × slot, 0 where not code
};

// Where the bytes go: a raw write of the whole buffer (the platform's write(2) loop).
struct CrashSink {
  void* context;
  bool (*write)(void* context, const void* bytes, size_t size);
};

class CrashWriter {
 public:
  // `crash_marker_type` is the registered marker type of the crash marker (fields: signal name,
  // code, address), `start_ns` the session's time origin.
  CrashWriter(const RingBuffer& ring, const MetadataQueue& metadata, uint32_t crash_marker_type,
              uint64_t start_ns);
  CrashWriter(const CrashWriter&) = delete;
  CrashWriter& operator=(const CrashWriter&) = delete;

  // Async-signal-safe. Returns false if the sink failed.
  bool write(const CrashReport& report, const CrashSink& sink);

 private:
  bool flush(const CrashSink& sink);
  bool append(RecordType type, std::span<const uint8_t> payload, const CrashSink& sink);

  const RingBuffer& ring_;
  const MetadataQueue& metadata_;
  const uint32_t crash_marker_type_;
  const uint64_t start_ns_;
  LargeArray<uint8_t> scratch_;  // one ring record
  size_t scratch_size_;
  LargeArray<uint8_t> out_;     // framed records on their way to the sink
  LargeArray<uint8_t> record_;  // one record of the crash being encoded
  size_t out_size_ = 0;
  bool failed_ = false;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_CRASH_WRITER_H_
