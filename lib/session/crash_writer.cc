#include "session/crash_writer.h"

#include <cstring>

#include "dump/dump_records.h"

namespace inprof::internal {
namespace {

constexpr size_t kOutSize = 64u << 10;
constexpr size_t kRecordSize = 8192;        // the crash sample, marker and capture records
constexpr size_t kFrameHeaderMax = 1 + 10;  // type, varint size

}  // namespace

CrashWriter::CrashWriter(const RingBuffer& ring, const MetadataQueue& metadata,
                         uint32_t crash_marker_type, uint64_t start_ns)
    : ring_(ring),
      metadata_(metadata),
      crash_marker_type_(crash_marker_type),
      start_ns_(start_ns),
      scratch_size_((ring.max_payload() + 7) & ~size_t(7)),
      out_(make_large_array<uint8_t>(kOutSize)),
      record_(make_large_array<uint8_t>(kRecordSize)) {
  scratch_ = make_large_array<uint8_t>(scratch_size_);  // a quarter of the ring: large_alloc.h
  // Touch the buffers now: a crash handler should not be the first to fault their pages in.
  std::memset(scratch_.get(), 0, scratch_size_);
  std::memset(out_.get(), 0, kOutSize);
  std::memset(record_.get(), 0, kRecordSize);
}

bool CrashWriter::flush(const CrashSink& sink) {
  if (out_size_ > 0 && !failed_ && !sink.write(sink.context, out_.get(), out_size_)) {
    failed_ = true;
  }
  out_size_ = 0;
  return !failed_;
}

bool CrashWriter::append(RecordType type, std::span<const uint8_t> payload, const CrashSink& sink) {
  uint8_t frame[kFrameHeaderMax];
  size_t n = 0;
  frame[n++] = static_cast<uint8_t>(type);
  uint64_t size = payload.size();
  do {
    const uint8_t byte = size & 0x7f;
    size >>= 7;
    frame[n++] = byte | (size ? 0x80 : 0);
  } while (size);
  if (out_size_ + n + payload.size() > kOutSize) {
    if (!flush(sink)) return false;
  }
  if (n + payload.size() > kOutSize) {  // larger than the buffer: straight through
    return sink.write(sink.context, frame, n) &&
           sink.write(sink.context, payload.data(), payload.size());
  }
  std::memcpy(out_.get() + out_size_, frame, n);
  std::memcpy(out_.get() + out_size_ + n, payload.data(), payload.size());
  out_size_ += n + payload.size();
  return true;
}

bool CrashWriter::write(const CrashReport& report, const CrashSink& sink) {
  uint8_t header[kDumpHeaderSize] = {};
  std::memcpy(header, kDumpMagic, 8);
  header[8] = kDumpFormatVersion & 0xff;
  header[12] = kDumpFlagRaw;
  if (!sink.write(sink.context, header, sizeof header)) return false;

  // Process, modules, threads and declarations, kept encoded for this moment; the ring only as
  // far as it was reserved before the image was read (see RingBuffer::reserved_end).
  const uint64_t until = ring_.reserved_end();
  const std::span<const uint8_t> image = metadata_.crash_image();
  if (!image.empty() && !sink.write(sink.context, image.data(), image.size())) return false;

  const uint64_t crash_ns = report.time_ns > start_ns_ ? report.time_ns - start_ns_ : 0;
  uint64_t first_ns = crash_ns;
  bool any = false;
  ring_.read_retained(
      std::span<uint8_t>(scratch_.get(), scratch_size_),
      [&](uint8_t type, std::span<const uint8_t> payload) {
        if (auto t = record_time(static_cast<RecordType>(type), payload)) {
          if (!any || *t < first_ns) first_ns = *t;
          any = true;
        }
        (void)append(static_cast<RecordType>(type), payload, sink);
      },
      until);

  // The crashing thread's last moment: a sample where it crashed, and the crash marker.
  // Not on the stack: the handler may run on a small alternate stack.
  uint8_t* const buffer = record_.get();
  constexpr size_t kBufferSize = kRecordSize;
  {
    ByteWriter w(std::span<uint8_t>(buffer, kBufferSize));
    LeafCandidate candidates[kMaxLeafCandidates];
    size_t candidate_count = 0;
    for (size_t slot = 0; slot < report.leaf_candidates.size() && slot < 8; ++slot) {
      if (report.leaf_candidates[slot] != 0) {
        candidates[candidate_count++] = {static_cast<uint8_t>(slot), report.leaf_candidates[slot]};
      }
    }
    const size_t frame_count = std::min<size_t>(report.frames.size(), 1000);
    encode_sample(w, report.tid, crash_ns, std::nullopt, kSampleFramePointerWalk,
                  report.frames.first(frame_count),
                  std::span<const LeafCandidate>(candidates, candidate_count));
    if (!w.overflowed() && !report.frames.empty()) append(RecordType::kSample, w.view(), sink);
  }
  {
    ByteWriter w(std::span<uint8_t>(buffer, kBufferSize));
    char address[19] = "0x";
    for (int i = 0; i < 16; ++i) {
      address[2 + i] = "0123456789abcdef"[(report.address >> (60 - 4 * i)) & 0xf];
    }
    const MarkerValueView values[] = {
        {MarkerValue::kString, 0, 0, report.signal_name},
        {MarkerValue::kInteger, report.code, 0, {}},
        {MarkerValue::kString, 0, 0, std::string_view(address, 18)},
    };
    encode_marker(w, report.tid, 0 /* Other */, 0 /* instant */, crash_ns, crash_ns, "Crash",
                  crash_marker_type_, values);
    if (!w.overflowed()) append(RecordType::kMarker, w.view(), sink);
  }
  {
    ByteWriter w(std::span<uint8_t>(buffer, kBufferSize));
    encode(w, CaptureRecord{any ? first_ns : crash_ns, crash_ns, CaptureReason::kCrash,
                            ring_.overwritten()});
    append(RecordType::kCapture, w.view(), sink);
  }
  return flush(sink);
}

}  // namespace inprof::internal
