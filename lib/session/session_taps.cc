// The session's record taps (record_tap.h): pull mode's scrapes read the records the writer
// drains (part of Session, session.h).
#include <algorithm>
#include <mutex>

#include "session/process_info.h"
#include "session/session.h"

namespace inprof::internal {

void Session::attach_tap(RecordTap* tap) {
  std::lock_guard lock(taps_mutex_);
  // What the writer takes from the queue later reaches the tap through feed_taps*(): an entry
  // kept before the tap is listed may come twice, which a tap bears (a thread's name, a module's
  // load, a string: the same again).
  tap->attached(start_ns_, options_);
  uint64_t next = 0;
  const MetadataQueue& known =
      metadata_.mode() == MetadataQueue::Mode::kTake ? tap_metadata_ : metadata_;
  for (const auto& [type, payload] : known.snapshot(0, &next)) tap->record(type, payload);
  taps_.push_back(tap);
  tap_count_.store(taps_.size(), std::memory_order_relaxed);
}

void Session::detach_tap(RecordTap* tap) {
  std::lock_guard lock(taps_mutex_);
  taps_.erase(std::remove(taps_.begin(), taps_.end(), tap), taps_.end());
  tap_count_.store(taps_.size(), std::memory_order_relaxed);
}

void Session::feed_taps(RecordType type, std::span<const uint8_t> payload) {
  if (tap_count_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard lock(taps_mutex_);
  for (RecordTap* tap : taps_) tap->record(type, payload);
}

void Session::feed_taps_metadata(RecordType type, const std::vector<uint8_t>& payload) {
  std::lock_guard lock(taps_mutex_);
  tap_metadata_.push_payload(type, payload);
  for (RecordTap* tap : taps_) tap->record(type, payload);
}

void Session::end_taps() {
  std::lock_guard lock(taps_mutex_);
  for (RecordTap* tap : taps_) tap->session_ended();
  taps_.clear();
  tap_count_.store(0, std::memory_order_relaxed);
}

bool Session::drain_for_taps(uint64_t timeout_ns) {
  std::unique_lock lock(writer_mutex_);  // the writer is between drains once this is held
  if (writer_stop_ || !writer_thread_.joinable()) return false;
  const uint64_t target = drains_done_ + 1;
  drain_requested_.store(true, std::memory_order_relaxed);
  writer_cv_.notify_all();
  return writer_cv_.wait_for(lock, std::chrono::nanoseconds(timeout_ns), [&] {
    return drains_done_ >= target || writer_stop_;
  }) && !writer_stop_;
}

}  // namespace inprof::internal
