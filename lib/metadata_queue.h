// Records that must never be dropped (process, modules, threads) go from the sampler to the
// writer through this queue rather than the ring buffer. Rare, so a mutex is fine: neither side
// holds it while any thread is stopped.
#ifndef INPROF_LIB_METADATA_QUEUE_H_
#define INPROF_LIB_METADATA_QUEUE_H_

#include <mutex>
#include <utility>
#include <vector>

#include "dump/dump_records.h"

namespace inprof::internal {

class MetadataQueue {
 public:
  using Entry = std::pair<RecordType, std::vector<uint8_t>>;

  template <typename Record>
  void push(RecordType type, const Record& record) {
    std::vector<uint8_t> payload;
    {
      ByteWriter w(&payload);
      encode(w, record);
    }  // sizes the vector to what was written
    std::lock_guard lock(mutex_);
    entries_.emplace_back(type, std::move(payload));
  }

  std::vector<Entry> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(entries_, {});
  }

 private:
  std::mutex mutex_;
  std::vector<Entry> entries_;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_METADATA_QUEUE_H_
