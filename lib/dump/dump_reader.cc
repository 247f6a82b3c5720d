#include "dump/dump_reader.h"

#if !defined(INPROF_NO_ZSTD)
#include <zstd.h>
#endif

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "dump/chunk_samples.h"
#include "dump/stored_frames.h"

namespace inprof::internal {
namespace {

constexpr uint32_t kZstdMagic = 0xFD2FB528;
// A chunk decompressing to more than this is treated as corrupt (writers emit ~1 MiB chunks).
// The writer ends a chunk once it holds 1 MiB (and a record is at most about 1 MiB): anything
// much larger is damage, and decoding it would only cost memory.
constexpr size_t kMaxChunkSize = 16u << 20;

uint32_t read_le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

template <typename Record>
bool dispatch(ByteReader& r, DumpVisitor& v, void (DumpVisitor::*fn)(const Record&)) {
  Record rec;
  if (!decode(r, rec)) return false;
  (v.*fn)(rec);
  return true;
}

// Records whose reading is their visitor's call alone: whether it decoded, or nullopt when `type`
// is not one of them.
std::optional<bool> visit_plain_record(RecordType type, ByteReader& payload, DumpVisitor& v) {
  switch (type) {
    case RecordType::kProcess:
      return dispatch(payload, v, &DumpVisitor::on_process);
    case RecordType::kModuleLoad:
      return dispatch(payload, v, &DumpVisitor::on_module_load);
    case RecordType::kModuleUnload:
      return dispatch(payload, v, &DumpVisitor::on_module_unload);
    case RecordType::kThreadStart:
      return dispatch(payload, v, &DumpVisitor::on_thread_start);
    case RecordType::kThreadName:
      return dispatch(payload, v, &DumpVisitor::on_thread_name);
    case RecordType::kThreadEnd:
      return dispatch(payload, v, &DumpVisitor::on_thread_end);
    case RecordType::kSample:
      return dispatch(payload, v, &DumpVisitor::on_sample);
    case RecordType::kSampleRepeat:
      return dispatch(payload, v, &DumpVisitor::on_sample_repeat);
    case RecordType::kStats:
      return dispatch(payload, v, &DumpVisitor::on_stats);
    case RecordType::kCategory:
      return dispatch(payload, v, &DumpVisitor::on_category);
    case RecordType::kMarkerSchema:
      return dispatch(payload, v, &DumpVisitor::on_marker_schema);
    case RecordType::kMarker:
      return dispatch(payload, v, &DumpVisitor::on_marker);
    case RecordType::kString:
      return dispatch(payload, v, &DumpVisitor::on_string);
    case RecordType::kCounter:
      return dispatch(payload, v, &DumpVisitor::on_counter);
    case RecordType::kCounterSample:
      return dispatch(payload, v, &DumpVisitor::on_counter_sample);
    case RecordType::kPause:
      return dispatch(payload, v, &DumpVisitor::on_pause);
    case RecordType::kResume:
      return dispatch(payload, v, &DumpVisitor::on_resume);
    case RecordType::kModuleImage:
      return dispatch(payload, v, &DumpVisitor::on_module_image);
    case RecordType::kJitMap:
      return dispatch(payload, v, &DumpVisitor::on_jit_map);
    case RecordType::kCapture:
      return dispatch(payload, v, &DumpVisitor::on_capture);
    case RecordType::kAllocation:
      return dispatch(payload, v, &DumpVisitor::on_allocation);
    case RecordType::kFree:
      return dispatch(payload, v, &DumpVisitor::on_free);
    case RecordType::kAllocationStats:
      return dispatch(payload, v, &DumpVisitor::on_allocation_stats);
    default:
      return std::nullopt;
  }
}

// Parses the records of one decompressed chunk. Returns false at the first malformed record.
// `samples` holds what the chunk's sample batch refers to; each chunk starts it afresh.
bool parse_chunk(std::span<const uint8_t> chunk, DumpVisitor& v, DumpReadResult& result,
                 ChunkSamples& samples) {
  samples.start_chunk();
  ByteReader reader(chunk);
  while (reader.remaining() > 0) {
    uint8_t type;
    uint64_t size;
    if (!reader.u8(type) || !reader.varint(size) || size > reader.remaining()) return false;
    ByteReader payload(reader.take(size));
    bool ok = true;
    uint64_t delivered = 1;  // records counted: a sample batch counts its samples
    switch (static_cast<RecordType>(type)) {
      case RecordType::kEnd:
        ok = dispatch(payload, v, &DumpVisitor::on_end);
        result.complete = ok;
        break;
      case RecordType::kExecEnd: {
        ExecEndRecord record;
        ok = decode(payload, record);
        result.complete |= ok;
        result.ended_by_exec |= ok;
        break;
      }
      case RecordType::kLanded: {
        LandedRecord record;
        ok = decode(payload, record);
        if (ok) result.landed_records = record.records + 1;
        break;
      }
      case RecordType::kStack:
        ok = samples.add_stack(payload);
        break;
      case RecordType::kSampleBatch:
        delivered = 0;
        ok = samples.read_batch(payload, v, delivered);
        if (!ok) result.records += delivered;  // those before the damage were delivered
        break;
      default:
        // A record handed to its visitor as it is; or a newer writer's record: skipped (its
        // size is known).
        ok = visit_plain_record(static_cast<RecordType>(type), payload, v).value_or(true);
        break;
    }
    if (!ok) return false;
    result.records += delivered;
  }
  return true;
}

// Finds the next zstd frame magic at or after `from`, or returns `size`.
size_t find_next_frame(std::span<const uint8_t> data, size_t from) {
  for (size_t i = from; i + 4 <= data.size(); ++i) {
    if (read_le32(&data[i]) == kZstdMagic) return i;
  }
  return data.size();
}

// Where to go on after a frame that does not decode: its declared size may be the damaged part,
// so at the next frame magic number inside it, if any, rather than past all it claims.
size_t resume_after_bad_frame(std::span<const uint8_t> frame) {
  return std::min(frame.size(), find_next_frame(frame, 1));
}

#if defined(INPROF_NO_ZSTD)
// A build without zstd reads the frames it writes itself: stored, uncompressed (stored_frames.h).
class FrameDecoder {
 public:
  // The length of the complete frame at the start of `data`; 0 if incomplete or damaged.
  size_t frame_size(std::span<const uint8_t> data) {
    size_t size = 0;
    const StoredFrameResult r = read_stored_frame(data, kMaxChunkSize, &size, &scratch_);
    return r == StoredFrameResult::kOk || r == StoredFrameResult::kCompressed ? size : 0;
  }
  // False for a compressed frame: only a build with zstd reads those.
  bool decode(std::span<const uint8_t> frame, std::vector<uint8_t>& out) {
    size_t size = 0;
    return read_stored_frame(frame, kMaxChunkSize, &size, &out) == StoredFrameResult::kOk;
  }

 private:
  std::vector<uint8_t> scratch_;
};
#else
// A frame header may ask for a large window (libzstd accepts up to 128 MiB by default), which
// the decoder allocates before reading a byte of content. Our writer's frames hold at most
// kMaxChunkSize, so frames that want more than that are refused as damaged.
constexpr int kMaxWindowLog = 24;
static_assert((size_t{1} << kMaxWindowLog) >= kMaxChunkSize);

using DecompressionContext = std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)>;

DecompressionContext make_decompression_context() {
  DecompressionContext dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (dctx) ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, kMaxWindowLog);
  return dctx;
}

// Decompresses one frame without trusting the size its header declares.
bool decompress_frame(ZSTD_DCtx* dctx, std::span<const uint8_t> frame, std::vector<uint8_t>& out) {
  ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
  ZSTD_inBuffer in{frame.data(), frame.size(), 0};
  // Straight into `out`, sized from the input and doubled as needed: a fixed 128 KiB scratch
  // block per frame cost more (allocating and zeroing it) than decompressing a small chunk.
  out.clear();
  out.resize(std::min<size_t>(ZSTD_DStreamOutSize(), frame.size() * 4 + 4096));
  size_t used = 0;
  for (;;) {
    if (used == out.size()) out.resize(std::min(out.size() * 2, kMaxChunkSize + 1));
    ZSTD_outBuffer o{out.data() + used, out.size() - used, 0};
    size_t ret = ZSTD_decompressStream(dctx, &o, &in);
    if (ZSTD_isError(ret)) return false;
    used += o.pos;
    if (used > kMaxChunkSize) return false;
    if (ret == 0) {  // frame complete
      out.resize(used);
      return true;
    }
    if (in.pos == in.size && o.pos < o.size) return false;  // needs input it will not get
  }
}

class FrameDecoder {
 public:
  // The length of the complete frame at the start of `data`; 0 if incomplete or damaged.
  size_t frame_size(std::span<const uint8_t> data) {
    const size_t size = ZSTD_findFrameCompressedSize(data.data(), data.size());
    return ZSTD_isError(size) ? 0 : size;
  }
  bool decode(std::span<const uint8_t> frame, std::vector<uint8_t>& out) {
    return decompress_frame(dctx_.get(), frame, out);
  }

 private:
  DecompressionContext dctx_ = make_decompression_context();
};
#endif  // INPROF_NO_ZSTD

// Opens `path` for reading if it is a regular file; otherwise says why in `error`.
bool open_regular_file(const std::string& path, std::ifstream& in, std::string* error) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    *error = "cannot open '" + path + "': no such file";
    return false;
  }
  if (!std::filesystem::is_regular_file(status)) {
    *error = "cannot read '" + path + "': not a regular file";
    return false;
  }
  in.open(path, std::ios::binary);
  if (!in) {
    *error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

DumpReadResult read_dump(std::span<const uint8_t> file, DumpVisitor& visitor) {
  DumpReadResult result;
  if (file.size() < kDumpHeaderSize || std::memcmp(file.data(), kDumpMagic, 8) != 0) {
    result.error = "not an inprof dump (bad magic number)";
    return result;
  }
  result.version = read_le32(&file[8]);
  if (result.version < kOldestDumpFormatVersion || result.version > kDumpFormatVersion) {
    result.error = "dump format version " + std::to_string(result.version) +
                   " is not supported (this reader knows " +
                   std::to_string(kOldestDumpFormatVersion) + " to " +
                   std::to_string(kDumpFormatVersion) + ")";
    return result;
  }
  result.ok = true;
  const uint32_t flags = read_le32(&file[12]);
  if (flags & kDumpFlagRaw) {
    // A crash capture: one run of uncompressed records, written until the process died. A record
    // cut off by the end of the file (or damaged) ends the reading; all before it was delivered.
    result.raw = true;
    result.chunks = 1;
    ChunkSamples samples;
    if (!parse_chunk(file.subspan(kDumpHeaderSize), visitor, result, samples)) {
      result.warnings.push_back(
          "the crash capture ends with an incomplete or damaged record after " +
          std::to_string(result.records) + " records");
    }
    return result;
  }
  FrameDecoder decoder;
  ChunkSamples samples;
  std::vector<uint8_t> chunk;
  size_t pos = kDumpHeaderSize;
  while (pos < file.size()) {
    std::span<const uint8_t> rest = file.subspan(pos);
    const size_t frame_size = decoder.frame_size(rest);
    if (frame_size == 0) {
      size_t next = find_next_frame(file, pos + 1);
      if (next == file.size()) {
        result.warnings.push_back("the dump was cut short: the last " +
                                  std::to_string(rest.size()) +
                                  " bytes are an incomplete chunk (the process ended while the "
                                  "chunk was written, or the writer could not finish it: a full "
                                  "disk or a deleted file, which the process's stderr named)");
      } else {
        ++result.damaged;
        result.warnings.push_back("skipped " + std::to_string(next - pos) +
                                  " damaged bytes at offset " + std::to_string(pos));
      }
      pos = next;
      continue;
    }
    size_t advance = frame_size;
    if (!decoder.decode(rest.first(frame_size), chunk)) {
      advance = resume_after_bad_frame(rest.first(frame_size));
      ++result.damaged;
      result.warnings.push_back("chunk at offset " + std::to_string(pos) +
                                " does not decompress; skipped");
    } else if (!parse_chunk(chunk, visitor, result, samples)) {
      ++result.damaged;
      result.warnings.push_back("chunk at offset " + std::to_string(pos) +
                                " holds a malformed record; the rest of that chunk was skipped");
    }
    ++result.chunks;
    pos += advance;
  }
  return result;
}

DumpReadResult read_dump_file(const std::string& path, DumpVisitor& visitor) {
  DumpReadResult result;
  std::ifstream in;
  if (!open_regular_file(path, in, &result.error)) return result;
  // One read into a buffer of the file's size: a character-by-character copy into a growing
  // vector took seconds and twice the memory on a 100 MB dump.
  std::error_code ec;
  std::vector<uint8_t> bytes(static_cast<size_t>(std::filesystem::file_size(path, ec)));
  if (ec) bytes.clear();
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(in.gcount()));
  if (in.bad()) {
    result.error = "error reading '" + path + "'";
    return result;
  }
  return read_dump(bytes, visitor);
}

namespace {

// The unread part of a file, read ahead a block at a time into a buffer that slides along it.
class FileWindow {
 public:
  explicit FileWindow(std::ifstream& in) : in_(in) {}
  // Tries to have at least `n` bytes buffered; fewer only at the end of the file.
  void fill(size_t n) {
    if (begin_ > 0 && (begin_ >= buffer_.size() / 2 || buffer_.size() - begin_ < n)) {
      buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(begin_));
      begin_ = 0;
    }
    while (!eof_ && buffer_.size() - begin_ < n) {
      size_t old = buffer_.size(), want = std::max<size_t>(n - (old - begin_), 1u << 20);
      buffer_.resize(old + want);
      in_.read(reinterpret_cast<char*>(buffer_.data() + old), static_cast<std::streamsize>(want));
      buffer_.resize(old + static_cast<size_t>(in_.gcount()));
      if (!in_) eof_ = true;
    }
  }
  std::span<const uint8_t> rest() const {
    return std::span<const uint8_t>(buffer_).subspan(begin_);
  }
  void advance(size_t n) {
    begin_ += n;
    offset_ += n;
  }
  bool at_eof() const { return eof_; }
  bool failed() const { return in_.bad(); }
  uint64_t offset() const { return offset_; }  // of rest()[0] in the file

 private:
  std::ifstream& in_;
  std::vector<uint8_t> buffer_;
  size_t begin_ = 0;
  uint64_t offset_ = 0;
  bool eof_ = false;
};

}  // namespace

DumpReadResult read_dump_file_incrementally(const std::string& path, DumpVisitor& visitor) {
  DumpReadResult result;
  std::ifstream in;
  if (!open_regular_file(path, in, &result.error)) return result;
  FileWindow window(in);
  window.fill(kDumpHeaderSize);
  std::span<const uint8_t> header =
      window.rest().first(std::min(window.rest().size(), kDumpHeaderSize));
  // The header alone checks magic and version with read_dump's messages.
  result = read_dump(header, visitor);
  bool raw = result.ok && (read_le32(&header[12]) & kDumpFlagRaw);
#if defined(INPROF_NO_ZSTD)
  raw = true;  // without zstd, read_dump_file reads the stored frames (stored_frames.h)
#endif
  if (!result.ok || raw) {
    // A crash capture is one run of records as big as the ring: read whole.
    in.close();
    return result.ok ? read_dump_file(path, visitor) : result;
  }
#if !defined(INPROF_NO_ZSTD)
  result.chunks = 0;
  window.advance(kDumpHeaderSize);
  DecompressionContext dctx = make_decompression_context();
  std::vector<uint8_t> chunk;
  ChunkSamples samples;
  // A frame can only be as large as the biggest acceptable chunk plus zstd's overhead.
  constexpr size_t kMaxFrameWindow = kMaxChunkSize + (1u << 20);
  for (;;) {
    window.fill(1u << 20);
    if (window.rest().empty()) break;
    size_t frame_size = ZSTD_findFrameCompressedSize(window.rest().data(), window.rest().size());
    while (ZSTD_isError(frame_size) && !window.at_eof() && window.rest().size() < kMaxFrameWindow) {
      window.fill(window.rest().size() * 2);  // an incomplete frame, or damage: read on
      frame_size = ZSTD_findFrameCompressedSize(window.rest().data(), window.rest().size());
    }
    if (ZSTD_isError(frame_size)) {
      // Damage: skip to the next frame's magic number, as read_dump does.
      const uint64_t start = window.offset();
      window.advance(1);
      for (;;) {
        window.fill(1u << 20);
        std::span<const uint8_t> rest = window.rest();
        size_t next = find_next_frame(rest, 0);
        if (next < rest.size() || (window.at_eof() && rest.size() < 4)) {
          window.advance(next < rest.size() ? next : rest.size());
          break;
        }
        window.advance(rest.size() - 3);  // a magic number may straddle the next block
      }
      if (window.rest().empty()) {
        result.warnings.push_back("the dump was cut short: the last " +
                                  std::to_string(window.offset() - start) +
                                  " bytes are an incomplete chunk (the process ended while the "
                                  "chunk was written, or the writer could not finish it: a full "
                                  "disk or a deleted file, which the process's stderr named)");
      } else {
        ++result.damaged;
        result.warnings.push_back("skipped " + std::to_string(window.offset() - start) +
                                  " damaged bytes at offset " + std::to_string(start));
      }
      continue;
    }
    size_t advance = frame_size;
    if (!decompress_frame(dctx.get(), window.rest().first(frame_size), chunk)) {
      advance = resume_after_bad_frame(window.rest().first(frame_size));
      ++result.damaged;
      result.warnings.push_back("chunk at offset " + std::to_string(window.offset()) +
                                " does not decompress; skipped");
    } else if (!parse_chunk(chunk, visitor, result, samples)) {
      ++result.damaged;
      result.warnings.push_back("chunk at offset " + std::to_string(window.offset()) +
                                " holds a malformed record; the rest of that chunk was skipped");
    }
    ++result.chunks;
    window.advance(advance);
  }
  if (window.failed()) {
    result.warnings.push_back("error reading '" + path + "' after offset " +
                              std::to_string(window.offset()) + "; the rest was not read");
  }
#endif
  return result;
}

}  // namespace inprof::internal
