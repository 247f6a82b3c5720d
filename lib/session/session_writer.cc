// The session's writer thread: drains the ring into the dump, as rarely as its filling allows,
// ends windows and rotates (part of Session, session.h).
#include <algorithm>
#include <mutex>

#include "markers/marker_recorder.h"
#include "sampling/kernel_ring_refusals.h"
#include "session/chunk_flush.h"
#include "session/process_info.h"
#include "session/session.h"
#include "threads/profiler_threads.h"

namespace inprof::internal {

void Session::note_writer_cpu() {
  if (on_profiler_thread()) {
    writer_cpu_ns_.store(current_thread_cpu_ns(), std::memory_order_relaxed);
  } else if (const std::optional<uint64_t> cpu = writer_thread_.cpu_ns()) {
    writer_cpu_ns_.store(*cpu, std::memory_order_relaxed);  // the last drain, at exit (stop())
  }
}

void Session::wait_all_published(const std::function<void()>& meanwhile, size_t max_yields) {
  constexpr uint64_t kAbandonedWaitNs = 10000000;
  const uint64_t since = monotonic_ns();
  for (size_t i = 0; i < max_yields && !ring_->all_published(); ++i) {
    if (abandoned() && monotonic_ns() - since >= kAbandonedWaitNs) return;
    std::this_thread::yield();
    meanwhile();
  }
}

void Session::writer_loop() {
  // writer_mutex_ stays held while draining: hold_for_fork() takes it to keep the writer out of
  // the allocator during fork().
  std::unique_lock lock(writer_mutex_);
  const uint64_t rotate_ns = static_cast<uint64_t>(options_.rotate_interval.count());
  // How much the ring took in during the last wait, and how long that was.
  uint64_t woke_at = monotonic_ns();
  uint64_t reserved_at_wake = ring_->reserved_end();
  uint64_t filled = 0;
  uint64_t waited = 1;
  for (;;) {
    const uint64_t wait_ns = next_drain_in_ns(filled, waited, rotate_ns);
    writer_cv_.wait_for(lock, std::chrono::nanoseconds(wait_ns), [this] {
      return writer_stop_ || drain_requested_.load(std::memory_order_relaxed);
    });
    if (writer_stop_) break;
    drain_requested_.store(false, std::memory_order_relaxed);
    const uint64_t now = monotonic_ns();
    const uint64_t reserved = ring_->reserved_end();
    filled = reserved - reserved_at_wake;
    waited = std::max<uint64_t>(now - woke_at, 1);
    woke_at = now;
    reserved_at_wake = reserved;
    if (rotating_ && dump_ && now - start_ns_ - window_start_ns_ >= rotate_ns) {
      rotate();
    } else {
      drain(false);
    }
    ++drains_done_;
    writer_cv_.notify_all();  // drain_for_taps()
  }
  if (final_drain_done_) {
    // stop() drained the last records itself, at exit, and closes the dump.
    writer_finished_ = true;
    writer_cv_.notify_all();
    return;
  }
  lock.unlock();
  drain(true);
  // Closed here, in the table that holds it (a private one: see Session::start).
  if (dump_) {
    Status closed = dump_->close();
    if (!closed.ok() && write_status_.ok()) write_status_ = closed;
  }
}

uint64_t Session::next_drain_in_ns(uint64_t filled, uint64_t waited, uint64_t rotate_ns) const {
  const uint64_t now = monotonic_ns();
  // The next flush is due kFlushPeriodNs after the last (drain() flushes then).
  uint64_t wait = last_flush_ns_ + kFlushPeriodNs > now ? last_flush_ns_ + kFlushPeriodNs - now : 0;
  if (rotating_) {
    const uint64_t window_end = start_ns_ + window_start_ns_ + rotate_ns;
    wait = std::min(wait, window_end > now ? window_end - now : 0);
  }
  // At the rate the ring filled during the last wait, an eighth of it fills in this long.
  const uint64_t eighth = ring_->capacity() / 8;
  if (filled != 0) {
    const double eighth_ns =
        static_cast<double>(eighth) / static_cast<double>(filled) * static_cast<double>(waited);
    if (eighth_ns < static_cast<double>(wait)) wait = static_cast<uint64_t>(eighth_ns);
  }
  return std::max(wait, kMinDrainPeriodNs);
}

void Session::flush_chunk(bool finished) {
  Status flushed = dump_->flush();
  if (!flushed.ok() && write_status_.ok()) write_status_ = flushed;
  if (!lifeboat_) return;
  // A dump that lost a chunk is not one to finish later: the loss is said, the boat left empty.
  lifeboat_->landed(dump_->written(), ring_->drained_to(), finished || !write_status_.ok());
  ring_->release_drained();
}

void Session::add_metadata(RecordType type, std::span<const uint8_t> payload) {
  if (lifeboat_ && !lifeboat_->keep(type, payload)) {
    flush_chunk(false);  // the journal is full: what it kept goes to the dump first
    if (!lifeboat_->keep(type, payload)) {
      dump_->add_payload(type, payload);  // larger than the journal: into a chunk of its own
      flush_chunk(false);
      return;
    }
  }
  dump_->add_payload(type, payload);
}

void Session::drain_records() {
  auto add = [this](uint8_t raw_type, std::span<const uint8_t> payload) {
    auto type = static_cast<RecordType>(raw_type);
    feed_taps(type, payload);
    if (!dump_) return;  // taps only
    if (rotating_) payload = window_repeats_.pass(&type, payload);
    dump_->add_payload(type, payload);
    if (lifeboat_) {
      if (dump_->pending_bytes() >= kFlushBytes) flush_chunk(false);
      return;
    }
    Status flushed = flush_if_full(*dump_);
    if (!flushed.ok() && write_status_.ok()) write_status_ = flushed;
  };
  // Metadata first, and the ring only as far as it was reserved before the metadata was taken:
  // the thread-start or module record a sample refers to is always written before the sample.
  const uint64_t until = ring_->reserved_end();
  if (rotating_) {
    for (auto& [type, payload] : metadata_.snapshot(next_metadata_, &next_metadata_)) {
      feed_taps(type, payload);
      if (type == RecordType::kThreadEnd) {
        ByteReader r(payload);
        uint64_t tid = 0;
        if (r.varint(tid)) window_repeats_.thread_ended(tid);
      }
      if (dump_) dump_->add_payload(type, payload);
    }
  } else {
    for (auto& [type, payload] : metadata_.take()) {
      feed_taps_metadata(type, payload);
      if (dump_) add_metadata(type, payload);
    }
  }
  if (lifeboat_) {
    ring_->drain_held(add, until);  // the space stays the ring's until its chunk is written
  } else {
    ring_->drain(add, until);
  }
}

void Session::drain(bool final) {
  // No dump: a rotation failed to open the next window (write_status_ says why), or the session
  // serves record taps only.
  if (!dump_ && !taps_only_) return;
  drain_records();
  if (final) {
    // The sampler has stopped; marker writers racing with the end get refused from here on,
    // and those already inside finish publishing what they reserved.
    ring_->close();
    wait_all_published([this] { drain_records(); });
    drain_records();
  }
  const uint64_t now = monotonic_ns();
  if (!dump_) {
    last_flush_ns_ = now;  // taps only: drained as often as a dump would be flushed
    return;
  }
  if (final) {
    end_window(now);
    return;
  }
  // With a lifeboat the ring's space is held until the chunk is written: written before an
  // eighth of the ring is held, so that the sampler never finds it full for that.
  const bool ring_held = lifeboat_ && ring_->held_bytes() >= ring_->capacity() / 8;
  if (dump_->pending_bytes() < kFlushBytes && now - last_flush_ns_ < kFlushPeriodNs && !ring_held) {
    return;
  }
  note_writer_cpu();
  dump_->add(RecordType::kStats, stats_record());
  if (allocation_pool_) dump_->add(RecordType::kAllocationStats, allocation_stats());
  flush_chunk(false);
  last_flush_ns_ = now;
}

StatsRecord Session::stats_record() const {
  const SamplerStats s = sampler_->stats();
  StatsRecord r{s.samples_written,
                s.samples_dropped,
                s.threads_timed_out,
                s.ticks_late,
                MarkerRecorder::instance().dropped() - markers_dropped_at_start_,
                s.samples_given_up,
                s.cpu_ns + writer_cpu_ns_.load(std::memory_order_relaxed),
                abandoned() ? 1u : 0u};
  r.time_ns = monotonic_ns() - start_ns_;
  r.sampler_ticks = s.ticks.ticks;
  r.sampler_cpu_ns = s.cpu_ns;
  r.tick_cpu_min_ns = s.ticks.cpu_min_ns;
  r.tick_cpu_max_ns = s.ticks.cpu_max_ns;
  r.tick_interval_min_ns = s.ticks.interval_min_ns;
  r.tick_interval_max_ns = s.ticks.interval_max_ns;
  const KernelRingRefusals refused = kernel_ring_refusals();
  r.rings_refused_allowance = refused.allowance;
  r.rings_refused_permission = refused.permission;
  r.rings_refused_other = refused.other;
  r.activity_followed = activity_followed_.load(std::memory_order_relaxed);
  r.sleep_stacks_unread = s.sleep_stacks_unread;
  return r;
}

void Session::end_window(uint64_t now) {
  note_writer_cpu();
  dump_->add(RecordType::kStats, stats_record());
  if (allocation_pool_) dump_->add(RecordType::kAllocationStats, allocation_stats());
  if (rotating_) {
    dump_->add(RecordType::kCapture,
               CaptureRecord{window_start_ns_, now - start_ns_, CaptureReason::kRotation, 0});
  }
  Status copied = copy_jit_map(*dump_);
  if (!copied.ok() && write_status_.ok()) write_status_ = copied;
  dump_->add(RecordType::kEnd, EndRecord{now - start_ns_});
  flush_chunk(/*finished=*/true);
  last_flush_ns_ = now;
  if (rotating_) {
    // Closed here rather than by stop(): the file is complete before it is counted.
    Status closed = dump_->close();
    if (!closed.ok() && write_status_.ok()) write_status_ = closed;
    dump_.reset();
    window_files_->closed(output_path_);
  }
}

void Session::rotate() {
  // Everything reserved up to now goes to this window; what comes after, to the next. The
  // window ends after the drain: every sample it holds was taken before its end.
  drain_records();
  const uint64_t now = monotonic_ns();
  end_window(now);
  ++window_number_;
  window_start_ns_ = now - start_ns_;
  Status status;
  std::string path;
  auto file = OutputFile::create_unshared(window_files_->path(window_number_, wall_clock_ns()),
                                          &status, &path);
  if (file) dump_ = DumpWriter::create(std::move(file), &status);
  if (!dump_) {
    // Sampling goes on; nothing more is written (the ring drops what it cannot hold).
    if (write_status_.ok()) write_status_ = status;
    return;
  }
  output_path_ = path;
  window_repeats_.new_window();
  // The new window starts with everything retained: process, modules, threads, declarations.
  for (auto& [type, payload] : metadata_.snapshot(0, &next_metadata_)) {
    dump_->add_payload(type, payload);
  }
}

}  // namespace inprof::internal
