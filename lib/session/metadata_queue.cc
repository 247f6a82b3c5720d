#include "session/metadata_queue.h"

#include <algorithm>
#include <unordered_set>

#include "sampling/module_lister.h"

namespace inprof::internal {

void MetadataQueue::push_payload(RecordType type, std::vector<uint8_t> payload) {
  std::lock_guard lock(mutex_);
  if (mode_ == Mode::kTake) {
    entries_.emplace_back(type, std::move(payload));
    return;
  }
  if (mode_ == Mode::kRetainWithCrashImage) append_to_image(type, payload);
  kept_.push_back(Kept{next_seq_++, type, std::move(payload)});
  if (kept_.size() >= prune_at_) {
    prune();
    prune_at_ = std::max(kPruneAt, 2 * kept_.size());
  }
}

void MetadataQueue::push_image(const ModuleRecord& module) {
  std::span<const uint8_t> image = vdso_image(module.start, module.end);
  if (image.empty() || image.size() > kMaxModuleImageSize) return;
  push(RecordType::kModuleImage, ModuleImageRecord{module.id, {image.begin(), image.end()}});
}

std::vector<MetadataQueue::Entry> MetadataQueue::take() {
  std::lock_guard lock(mutex_);
  return std::exchange(entries_, {});
}

std::vector<MetadataQueue::Entry> MetadataQueue::snapshot(uint64_t from, uint64_t* next) const {
  std::lock_guard lock(mutex_);
  std::vector<Entry> out;
  for (const Kept& k : kept_) {
    if (k.seq >= from) out.emplace_back(k.type, k.payload);
  }
  *next = next_seq_;
  return out;
}

size_t MetadataQueue::retained() const {
  std::lock_guard lock(mutex_);
  return kept_.size();
}

std::span<const uint8_t> MetadataQueue::crash_image() const {
  const Image* image = image_.load(std::memory_order_acquire);
  if (!image) return {};
  return {image->bytes.get(), image->size.load(std::memory_order_acquire)};
}

namespace {

// The first field of thread and module records is the thread id or the module id.
uint64_t leading_id(const std::vector<uint8_t>& payload) {
  ByteReader r(payload);
  uint64_t id = 0;
  (void)r.varint(id);
  return id;
}

}  // namespace

void MetadataQueue::prune() {
  ++prunes_;
  // Ended threads and unloaded modules, newest last.
  std::vector<uint64_t> ended_threads, unloaded_modules;
  for (const Kept& k : kept_) {
    if (k.type == RecordType::kThreadEnd) ended_threads.push_back(leading_id(k.payload));
    if (k.type == RecordType::kModuleUnload) unloaded_modules.push_back(leading_id(k.payload));
  }
  auto oldest = [](std::vector<uint64_t>& ids) {
    const size_t drop = ids.size() > kKeepEnded ? ids.size() - kKeepEnded : 0;
    return std::unordered_set<uint64_t>(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(drop));
  };
  const auto gone_threads = oldest(ended_threads);
  const auto gone_modules = oldest(unloaded_modules);
  if (gone_threads.empty() && gone_modules.empty()) return;
  std::erase_if(kept_, [&](const Kept& k) {
    switch (k.type) {
      case RecordType::kThreadStart:
      case RecordType::kThreadName:
      case RecordType::kThreadEnd:
        return gone_threads.count(leading_id(k.payload)) != 0;
      case RecordType::kModuleLoad:
      case RecordType::kModuleImage:
      case RecordType::kModuleUnload:
        return gone_modules.count(leading_id(k.payload)) != 0;
      default:
        return false;
    }
  });
  if (mode_ == Mode::kRetainWithCrashImage) rebuild_image(0);
}

void MetadataQueue::append_to_image(RecordType type, std::span<const uint8_t> payload) {
  const size_t needed = 1 + 10 + payload.size();
  Image* image = image_.load(std::memory_order_relaxed);
  if (!image || image->capacity - image->size.load(std::memory_order_relaxed) < needed) {
    rebuild_image(needed);
    image = image_.load(std::memory_order_relaxed);
  }
  // Written past the published size first, then published: a crash handler reading the image
  // concurrently sees whole records only.
  std::vector<uint8_t> framed;
  append_record(framed, type, payload);
  const size_t size = image->size.load(std::memory_order_relaxed);
  std::copy(framed.begin(), framed.end(), image->bytes.get() + size);
  image->size.store(size + framed.size(), std::memory_order_release);
}

void MetadataQueue::rebuild_image(size_t min_capacity) {
  std::vector<uint8_t> all;
  for (const Kept& k : kept_) append_record(all, k.type, k.payload);
  auto image =
      std::make_unique<Image>(std::max<size_t>(2 * (all.size() + min_capacity), 64u << 10));
  std::copy(all.begin(), all.end(), image->bytes.get());
  image->size.store(all.size(), std::memory_order_relaxed);
  // A crash handler may still be writing an older image out: keep the last two alive.
  images_[2] = std::move(images_[1]);
  images_[1] = std::move(images_[0]);
  images_[0] = std::move(image);
  image_.store(images_[0].get(), std::memory_order_release);
}

}  // namespace inprof::internal
