// Flight-recorder captures and the JIT map copy: what the session writes besides its stream
// (part of Session, session.h).
#include <filesystem>
#include <fstream>
#include <string>

#include "session/chunk_flush.h"
#include "session/process_info.h"
#include "session/session.h"

namespace inprof::internal {

Status Session::copy_jit_map(DumpWriter& dump) {
  // perf's convention, followed by node --perf-basic-prof, python -X perf and other JITs.
  constexpr size_t kMaxMap = 256u << 20;
  const std::string path = "/tmp/perf-" + std::to_string(process_id()) + ".map";
  // /tmp is anyone's: a FIFO planted there would hold the last drain, so stop() and exit().
  std::error_code not_there;
  if (!std::filesystem::is_regular_file(path, not_there)) return Status();
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status();
  std::string piece, line;
  size_t total = 0;
  Status status;
  while (std::getline(in, line) && total < kMaxMap) {
    if (line.size() > 4096) continue;  // not a symbol line
    total += line.size() + 1;
    if (piece.size() + line.size() + 1 > kMaxJitMapPiece) {
      dump.add(RecordType::kJitMap, JitMapRecord{std::move(piece)});
      piece.clear();
      Status flushed = flush_if_full(dump);
      if (status.ok()) status = flushed;
    }
    piece += line;
    piece += '\n';
  }
  if (!piece.empty()) dump.add(RecordType::kJitMap, JitMapRecord{std::move(piece)});
  return status;
}

Status Session::capture(const std::string& path, CaptureReason reason) {
  if (!ring_mode_) {
    return Status::error(Status::Code::kInvalidOption,
                         "capture() needs a ring-mode session (Options::mode = Mode::kRing); a "
                         "streaming session writes everything to its dump already");
  }
  Status status;
  std::string actual_path;
  auto file = OutputFile::create_unshared(path, &status, &actual_path);
  if (!file) return status;
  return write_capture(std::move(file), reason);
}

Status Session::write_capture(std::unique_ptr<OutputFile> file, CaptureReason reason) {
  std::lock_guard lock(capture_mutex_);
  Status status;
  auto dump = DumpWriter::create(std::move(file), &status);
  if (!dump) return status;
  const uint64_t now = monotonic_ns() - start_ns_;
  const uint64_t window = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.ring_seconds).count());
  const uint64_t cutoff = window != 0 && now > window ? now - window : 0;

  // As in drain(): the ring only as far as it was reserved before the metadata was read.
  const uint64_t until = ring_->reserved_end();
  uint64_t next_metadata = 0;
  for (auto& [type, payload] : metadata_.snapshot(0, &next_metadata)) {
    dump->add_payload(type, payload);
  }
  // The ring is read while samples and markers keep arriving; records older than the window are
  // left out, and so are repeats whose first sample the ring has already overwritten. Guarded:
  // a record not yet read is never evicted (its would-be evictor drops its own, counted), so the
  // capture holds one unbroken range.
  // A quarter of the ring (MiBs): from large_alloc, to leave malloc's thresholds alone.
  ByteBuffer scratch((ring_->max_payload() + 7) & ~size_t(7));
  std::unordered_set<uint64_t> sampled_threads;
  uint64_t first = now;
  bool trimmed = false;
  ring_->read_retained(
      scratch,
      [&](uint8_t raw_type, std::span<const uint8_t> payload) {
        const auto type = static_cast<RecordType>(raw_type);
        const std::optional<uint64_t> time = record_time(type, payload);
        if (time && *time < cutoff) {
          trimmed = true;
          return;
        }
        if (type == RecordType::kSample || type == RecordType::kSampleRepeat) {
          ByteReader r(payload);
          uint64_t tid = 0;
          (void)r.varint(tid);
          if (type == RecordType::kSample) {
            sampled_threads.insert(tid);
          } else if (!sampled_threads.count(tid)) {
            return;
          }
        }
        if (time) first = std::min(first, *time);
        dump->add_payload(type, payload);
        Status flushed = flush_if_full(*dump);
        if (status.ok()) status = flushed;
      },
      until, /*guard=*/true);
  // What arrived while the ring was read: the modules and threads its newest records refer to.
  for (auto& [type, payload] : metadata_.snapshot(next_metadata, &next_metadata)) {
    dump->add_payload(type, payload);
  }
  dump->add(RecordType::kStats, stats_record());
  if (allocation_pool_) dump->add(RecordType::kAllocationStats, allocation_stats());
  dump->add(RecordType::kCapture,
            CaptureRecord{trimmed ? cutoff : first, now, reason, ring_->overwritten()});
  Status copied = copy_jit_map(*dump);
  if (status.ok()) status = copied;
  dump->add(RecordType::kEnd, EndRecord{now});
  Status closed = dump->close();
  return status.ok() ? closed : status;
}

}  // namespace inprof::internal
