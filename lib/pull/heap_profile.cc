#include "pull/heap_profile.h"

#include <algorithm>

#include "pprof/pprof_builder.h"
#include "pull/module_mappings.h"
#include "session/process_info.h"

namespace inprof::internal {

void HeapProfile::attached(uint64_t, const Options& options) {
  std::lock_guard lock(mutex_);
  // A new session: what the last one recorded is not this one's heap.
  attached_ = true;
  start_unix_ns_ = wall_clock_ns();
  sample_bytes_ = options.allocation_sample_bytes;
  by_stack_.clear();
  live_.clear();
  modules_.clear();
}

bool HeapProfile::has_session() const {
  std::lock_guard lock(mutex_);
  return attached_;
}

void HeapProfile::record(RecordType type, std::span<const uint8_t> payload) {
  std::lock_guard lock(mutex_);
  ByteReader r(payload);
  switch (type) {
    case RecordType::kModuleLoad: {
      ModuleRecord m;
      if (decode(r, m)) modules_[m.id] = std::move(m);
      return;
    }
    case RecordType::kAllocation:
      add_allocation(payload);
      return;
    case RecordType::kFree:
      add_free(payload);
      return;
    default:
      return;
  }
}

void HeapProfile::add_allocation(std::span<const uint8_t> payload) {
  ByteReader r(payload);
  AllocationRecord a;
  if (!decode(r, a) || a.frames.empty()) return;
  Totals& t = by_stack_[a.frames];
  const int64_t bytes = static_cast<int64_t>(a.weight);
  const int64_t objects =
      std::max<int64_t>(1, bytes / static_cast<int64_t>(std::max<uint64_t>(a.size, 1)));
  t.alloc_objects += objects;
  t.alloc_bytes += bytes;
  t.inuse_objects += objects;
  t.inuse_bytes += bytes;
  // A block at an address already live was freed unseen (its free came before the session saw
  // it, or was not recorded): it leaves the heap now.
  auto [it, inserted] = live_.try_emplace(a.address, Block{&t, objects, bytes});
  if (!inserted) {
    it->second.totals->inuse_objects -= it->second.objects;
    it->second.totals->inuse_bytes -= it->second.bytes;
    it->second = Block{&t, objects, bytes};
  }
}

void HeapProfile::add_free(std::span<const uint8_t> payload) {
  ByteReader r(payload);
  FreeRecord f;
  if (!decode(r, f)) return;
  auto it = live_.find(f.address);
  if (it == live_.end()) return;
  it->second.totals->inuse_objects -= it->second.objects;
  it->second.totals->inuse_bytes -= it->second.bytes;
  live_.erase(it);
}

std::string HeapProfile::pprof(uint64_t now_unix_ns) {
  std::lock_guard lock(mutex_);
  PprofBuilder builder({{"alloc_objects", "count"},
                        {"alloc_space", "bytes"},
                        {"inuse_objects", "count"},
                        {"inuse_space", "bytes"}},
                       "inuse_space", {"space", "bytes"}, static_cast<int64_t>(sample_bytes_));
  std::vector<uint64_t> locations;
  for (const auto& [frames, t] : by_stack_) {
    locations.clear();
    // frames[0] is already the call into the allocator (its return address minus one).
    for (size_t i = 0; i < frames.size(); ++i) {
      locations.push_back(builder.location(frames[i], /*call_site=*/i > 0));
    }
    const int64_t values[] = {t.alloc_objects, t.alloc_bytes, t.inuse_objects, t.inuse_bytes};
    builder.add_sample(locations, {}, values);
  }
  add_module_mappings(modules_, builder);
  const uint64_t duration = now_unix_ns > start_unix_ns_ ? now_unix_ns - start_unix_ns_ : 0;
  return builder.encode(static_cast<int64_t>(start_unix_ns_), static_cast<int64_t>(duration));
}

}  // namespace inprof::internal
