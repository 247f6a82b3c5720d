// The heap as pull mode serves it (/debug/pprof/heap): the sampled allocations the running
// session has recorded since it started, summed by stack — alloc_objects and alloc_space,
// cumulative as Go's are (Grafana Alloy and Parca take the difference between two scrapes) —
// and of those the blocks not freed yet (inuse_objects, inuse_space). A sampled allocation
// stands for the bytes its weight says (the sampling's unbiased estimate), and for that many
// bytes' worth of blocks of its size.
//
// Attached to every session that records allocations (here::set_allocation_tap); fed by its
// writer thread, read by the pull thread; one lock between them.
#ifndef INPROF_LIB_PULL_HEAP_PROFILE_H_
#define INPROF_LIB_PULL_HEAP_PROFILE_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "dump/dump_records.h"
#include "session/record_tap.h"

namespace inprof::internal {

class HeapProfile final : public RecordTap {
 public:
  void attached(uint64_t session_start_ns, const Options& options) override;
  void record(RecordType type, std::span<const uint8_t> payload) override;
  void session_ended() override {}

  // Whether a session recording allocations was ever attached.
  bool has_session() const;
  // profile.proto (not gzipped) of what was recorded; `now_unix_ns`: its time.
  std::string pprof(uint64_t now_unix_ns);

 private:
  struct Totals {
    int64_t alloc_objects = 0, alloc_bytes = 0, inuse_objects = 0, inuse_bytes = 0;
  };
  struct Block {
    Totals* totals;
    int64_t objects, bytes;
  };
  void add_allocation(std::span<const uint8_t> payload);
  void add_free(std::span<const uint8_t> payload);

  mutable std::mutex mutex_;
  bool attached_ = false;
  uint64_t start_unix_ns_ = 0;
  uint64_t sample_bytes_ = 0;
  std::map<std::vector<uint64_t>, Totals> by_stack_;  // the allocating frames, leaf first
  std::unordered_map<uint64_t, Block> live_;          // by address
  std::map<uint64_t, ModuleRecord> modules_;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_PULL_HEAP_PROFILE_H_
