// Records that must never be dropped (process, modules, threads, declarations) go from the
// sampler to the dump through this queue rather than the ring buffer. Rare, so a mutex is fine:
// neither side holds it while any thread is stopped.
//
// Streaming sessions take() the entries as the writer thread drains. Ring (flight recorder)
// sessions keep them instead, for every capture to start with; the records of threads that ended
// and modules that were unloaded long ago are pruned, so memory stays bounded however many come
// and go. With a crash image, the entries are also kept encoded, ready for a crash handler to
// write with one system call.
#ifndef INPROF_LIB_METADATA_QUEUE_H_
#define INPROF_LIB_METADATA_QUEUE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "dump/dump_records.h"
#include "memory/large_alloc.h"

namespace inprof::internal {

class MetadataQueue {
 public:
  using Entry = std::pair<RecordType, std::vector<uint8_t>>;
  enum class Mode { kTake, kRetain, kRetainWithCrashImage };

  explicit MetadataQueue(Mode mode = Mode::kTake) : mode_(mode) {}
  MetadataQueue(const MetadataQueue&) = delete;
  MetadataQueue& operator=(const MetadataQueue&) = delete;

  template <typename Record>
  void push(RecordType type, const Record& record) {
    std::vector<uint8_t> payload;
    {
      ByteWriter w(&payload);
      encode(w, record);
    }  // sizes the vector to what was written
    push_payload(type, std::move(payload));
    if constexpr (std::is_same_v<Record, ModuleRecord>) {
      if (type == RecordType::kModuleLoad && (record.flags & kModuleVdso)) push_image(record);
    }
  }
  void push_payload(RecordType type, std::vector<uint8_t> payload);
  // After a vDSO's load record: its image (module_lister.h's vdso_image), which has no file.
  void push_image(const ModuleRecord& module);

  // kTake: everything pushed since the last take().
  std::vector<Entry> take();

  // kRetain: the entries kept, in order, from sequence number `from` on; `*next` receives the
  // number to pass next time to get only what came after.
  std::vector<Entry> snapshot(uint64_t from, uint64_t* next) const;

  // kRetainWithCrashImage: the kept entries as framed records (type, varint size, payload).
  // Async-signal-safe; the bytes stay valid at least until two more rebuilds of the image.
  std::span<const uint8_t> crash_image() const;

  Mode mode() const { return mode_; }

  // How many entries are kept now (tests watch it stay bounded), and how many times they were
  // pruned (tests watch that stay logarithmic while nothing can be).
  size_t retained() const;
  size_t prunes() const {
    std::lock_guard lock(mutex_);
    return prunes_;
  }

  // Pruning starts once this many entries are kept; it leaves the newest kKeepEnded of the ended
  // threads and unloaded modules. The next one comes once twice as many as it left are kept (so
  // that 10,000 live threads, nothing to prune, are not scanned again at every push).
  static constexpr size_t kPruneAt = 2048;
  static constexpr size_t kKeepEnded = 256;

 private:
  struct Kept {
    uint64_t seq;
    RecordType type;
    std::vector<uint8_t> payload;
  };
  struct Image {
    // 64 KiB or more: from large_alloc, so that dropping an outgrown image leaves malloc's
    // thresholds alone (large_alloc.h).
    explicit Image(size_t capacity)
        : bytes(make_large_array<uint8_t>(capacity)), capacity(capacity) {}
    LargeArray<uint8_t> bytes;
    size_t capacity;
    std::atomic<size_t> size{0};
  };

  void prune();
  void append_to_image(RecordType type, std::span<const uint8_t> payload);
  void rebuild_image(size_t min_capacity);

  const Mode mode_;
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;  // kTake
  std::deque<Kept> kept_;       // kRetain*
  size_t prune_at_ = kPruneAt;
  size_t prunes_ = 0;
  uint64_t next_seq_ = 0;
  std::atomic<Image*> image_{nullptr};
  std::unique_ptr<Image> images_[3];  // the current image and the two before it
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_METADATA_QUEUE_H_
