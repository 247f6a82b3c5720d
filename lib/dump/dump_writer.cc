#include "dump/dump_writer.h"

// INPROF_NO_ZSTD: a build without zstd (Debian has none for MinGW-w64) writes each chunk as a
// stored, uncompressed zstd frame (stored_frames.h): the same format, only larger.
#if defined(INPROF_NO_ZSTD)
#include "dump/stored_frames.h"
#else
#include <zstd.h>
#endif

#include <cstring>

namespace inprof::internal {

std::unique_ptr<DumpWriter> DumpWriter::create(std::unique_ptr<OutputFile> file, Status* status,
                                               int compression_level) {
  std::unique_ptr<DumpWriter> writer(new DumpWriter(std::move(file), compression_level));
  uint8_t header[kDumpHeaderSize] = {};
  std::memcpy(header, kDumpMagic, sizeof(kDumpMagic));
  for (int i = 0; i < 4; ++i) header[8 + i] = (kDumpFormatVersion >> (8 * i)) & 0xff;
  *status = writer->file_->write(header);
  if (!status->ok()) return nullptr;
  return writer;
}

DumpWriter::DumpWriter(std::unique_ptr<OutputFile> file, int level)
    : file_(std::move(file)), level_(level) {}

DumpWriter::~DumpWriter() { (void)close(); }

void DumpWriter::add_payload(RecordType type, std::span<const uint8_t> payload) {
  append_record(chunk_, type, payload);
}

Status DumpWriter::flush() {
  if (chunk_.empty() || closed_) return first_error_;
#if defined(INPROF_NO_ZSTD)
  compressed_.clear();
  append_stored_frame(chunk_, compressed_);
  chunk_.clear();
  Status s = file_->write(compressed_);
  if (!s.ok() && first_error_.ok()) first_error_ = s;
  return first_error_;
#else
  compressed_.resize(ZSTD_compressBound(chunk_.size()));
  size_t n =
      ZSTD_compress(compressed_.data(), compressed_.size(), chunk_.data(), chunk_.size(), level_);
  chunk_.clear();
  if (ZSTD_isError(n)) {
    if (first_error_.ok()) {
      first_error_ = Status::error(Status::Code::kOutputError,
                                   std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
    }
    return first_error_;
  }
  Status s = file_->write(std::span<const uint8_t>(compressed_.data(), n));
  if (!s.ok() && first_error_.ok()) first_error_ = s;
  return first_error_;
#endif
}

Status DumpWriter::close() {
  if (closed_) return first_error_;
  (void)flush();
  closed_ = true;
  Status s = file_->close();
  if (!s.ok() && first_error_.ok()) first_error_ = s;
  return first_error_;
}

}  // namespace inprof::internal
