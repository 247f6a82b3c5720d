// A reader of a streaming session's records besides its dump: pull mode's scrapes
// (pull/scrape_window.h). The writer thread hands it, in the dump's order, the metadata retained
// when it was attached, then every metadata record and every ring record it drains; never while
// a thread is stopped, never on a program thread but at stop().
#ifndef INPROF_LIB_SESSION_RECORD_TAP_H_
#define INPROF_LIB_SESSION_RECORD_TAP_H_

#include <cstdint>
#include <span>

#include "dump/dump_records.h"
#include "inprof/profiler.h"

namespace inprof::internal {

class RecordTap {
 public:
  virtual ~RecordTap() = default;
  // First, as it is attached: the session's clock origin (monotonic ns; records carry times
  // since it) and its options (the sampling interval, the allocations' sampling).
  virtual void attached(uint64_t session_start_ns, const Options& options) = 0;
  virtual void record(RecordType type, std::span<const uint8_t> payload) = 0;
  // The session stopped; nothing follows (the tap has been detached).
  virtual void session_ended() = 0;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_SESSION_RECORD_TAP_H_
