#include "dump/dump_reader.h"

#include <zstd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

namespace inprof::internal {
namespace {

constexpr uint32_t kZstdMagic = 0xFD2FB528;
// A chunk decompressing to more than this is treated as corrupt (writers emit ~1 MiB chunks).
constexpr size_t kMaxChunkSize = 256u << 20;

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

// Parses the records of one decompressed chunk. Returns false at the first malformed record.
bool parse_chunk(std::span<const uint8_t> chunk, DumpVisitor& v, DumpReadResult& result) {
  ByteReader reader(chunk);
  while (reader.remaining() > 0) {
    uint8_t type;
    uint64_t size;
    if (!reader.u8(type) || !reader.varint(size) || size > reader.remaining()) return false;
    ByteReader payload(reader.take(size));
    bool ok = true;
    switch (static_cast<RecordType>(type)) {
      case RecordType::kProcess:
        ok = dispatch(payload, v, &DumpVisitor::on_process);
        break;
      case RecordType::kModuleLoad:
        ok = dispatch(payload, v, &DumpVisitor::on_module_load);
        break;
      case RecordType::kModuleUnload:
        ok = dispatch(payload, v, &DumpVisitor::on_module_unload);
        break;
      case RecordType::kThreadStart:
        ok = dispatch(payload, v, &DumpVisitor::on_thread_start);
        break;
      case RecordType::kThreadName:
        ok = dispatch(payload, v, &DumpVisitor::on_thread_name);
        break;
      case RecordType::kThreadEnd:
        ok = dispatch(payload, v, &DumpVisitor::on_thread_end);
        break;
      case RecordType::kSample:
        ok = dispatch(payload, v, &DumpVisitor::on_sample);
        break;
      case RecordType::kSampleRepeat:
        ok = dispatch(payload, v, &DumpVisitor::on_sample_repeat);
        break;
      case RecordType::kStats:
        ok = dispatch(payload, v, &DumpVisitor::on_stats);
        break;
      case RecordType::kEnd:
        ok = dispatch(payload, v, &DumpVisitor::on_end);
        result.complete = ok;
        break;
      case RecordType::kCategory:
        ok = dispatch(payload, v, &DumpVisitor::on_category);
        break;
      case RecordType::kMarkerSchema:
        ok = dispatch(payload, v, &DumpVisitor::on_marker_schema);
        break;
      case RecordType::kMarker:
        ok = dispatch(payload, v, &DumpVisitor::on_marker);
        break;
      case RecordType::kString:
        ok = dispatch(payload, v, &DumpVisitor::on_string);
        break;
      case RecordType::kCounter:
        ok = dispatch(payload, v, &DumpVisitor::on_counter);
        break;
      case RecordType::kCounterSample:
        ok = dispatch(payload, v, &DumpVisitor::on_counter_sample);
        break;
      case RecordType::kPause:
        ok = dispatch(payload, v, &DumpVisitor::on_pause);
        break;
      case RecordType::kResume:
        ok = dispatch(payload, v, &DumpVisitor::on_resume);
        break;
      case RecordType::kJitMap:
        ok = dispatch(payload, v, &DumpVisitor::on_jit_map);
        break;
      default:
        break;  // a newer writer's record: skip it (its size is known)
    }
    if (!ok) return false;
    ++result.records;
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

// Decompresses one frame without trusting the size its header declares.
bool decompress_frame(ZSTD_DCtx* dctx, std::span<const uint8_t> frame, std::vector<uint8_t>& out) {
  ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
  out.clear();
  ZSTD_inBuffer in{frame.data(), frame.size(), 0};
  std::vector<uint8_t> block(ZSTD_DStreamOutSize());
  for (;;) {
    ZSTD_outBuffer o{block.data(), block.size(), 0};
    size_t ret = ZSTD_decompressStream(dctx, &o, &in);
    if (ZSTD_isError(ret)) return false;
    out.insert(out.end(), block.data(), block.data() + o.pos);
    if (out.size() > kMaxChunkSize) return false;
    if (ret == 0) return true;                              // frame complete
    if (in.pos == in.size && o.pos < o.size) return false;  // needs input it will not get
  }
}

}  // namespace

DumpReadResult read_dump(std::span<const uint8_t> file, DumpVisitor& visitor) {
  DumpReadResult result;
  if (file.size() < kDumpHeaderSize || std::memcmp(file.data(), kDumpMagic, 8) != 0) {
    result.error = "not an inprof dump (bad magic number)";
    return result;
  }
  result.version = read_le32(&file[8]);
  if (result.version == 0 || result.version > kDumpFormatVersion) {
    result.error = "dump format version " + std::to_string(result.version) +
                   " is not supported (this reader knows 1 to " +
                   std::to_string(kDumpFormatVersion) + ")";
    return result;
  }
  result.ok = true;

  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  std::vector<uint8_t> chunk;
  size_t pos = kDumpHeaderSize;
  while (pos < file.size()) {
    std::span<const uint8_t> rest = file.subspan(pos);
    size_t frame_size = ZSTD_findFrameCompressedSize(rest.data(), rest.size());
    if (ZSTD_isError(frame_size)) {
      size_t next = find_next_frame(file, pos + 1);
      if (next == file.size()) {
        result.warnings.push_back("the dump was cut short: the last " +
                                  std::to_string(rest.size()) +
                                  " bytes are an incomplete chunk (the process probably ended "
                                  "before the profiler stopped)");
      } else {
        result.warnings.push_back("skipped " + std::to_string(next - pos) +
                                  " damaged bytes at offset " + std::to_string(pos));
      }
      pos = next;
      continue;
    }
    if (!decompress_frame(dctx.get(), rest.first(frame_size), chunk)) {
      result.warnings.push_back("chunk at offset " + std::to_string(pos) +
                                " does not decompress; skipped");
    } else if (!parse_chunk(chunk, visitor, result)) {
      result.warnings.push_back("chunk at offset " + std::to_string(pos) +
                                " holds a malformed record; the rest of that chunk was skipped");
    }
    ++result.chunks;
    pos += frame_size;
  }
  return result;
}

DumpReadResult read_dump_file(const std::string& path, DumpVisitor& visitor) {
  DumpReadResult result;
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    result.error = "cannot open '" + path + "': no such file";
    return result;
  }
  if (!std::filesystem::is_regular_file(status)) {
    result.error = "cannot read '" + path + "': not a regular file";
    return result;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    result.error = "cannot open '" + path + "': " + std::strerror(errno);
    return result;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad()) {
    result.error = "error reading '" + path + "'";
    return result;
  }
  return read_dump(bytes, visitor);
}

}  // namespace inprof::internal
