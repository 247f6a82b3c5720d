#include "dump/dump_writer.h"

// INPROF_NO_ZSTD: a build without zstd (Debian has none for MinGW-w64) writes each chunk as a
// stored, uncompressed zstd frame (stored_frames.h): the same format, only larger.
#if defined(INPROF_NO_ZSTD)
#include "dump/stored_frames.h"
#else
// ZSTD_createCCtx_advanced and ZSTD_customMem: in zstd's "static linking only" section, but in
// every release since 1.0 and exported by the shared library.
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include "memory/large_alloc.h"
#endif

#include <cstring>

namespace inprof::internal {

#if defined(INPROF_NO_ZSTD)
struct DumpWriter::Compressor {
  explicit Compressor(int) {}
};
#else
// One context for the writer's life: ZSTD_compress builds (and allocates) a fresh one per call.
// Frames carry a checksum: a damaged chunk is then skipped whole rather than read as garbage,
// which matters more now that one damaged stack record would spoil every sample referring to it.
// Its memory comes from large_alloc: the workspace (hundreds of KiB at 1 kHz) is reallocated when
// a chunk needs larger tables, and freed, had malloc mapped it, it would raise glibc's mmap and
// trim thresholds for the whole program (large_alloc.h).
struct DumpWriter::Compressor {
  explicit Compressor(int level) {
    if (!context) return;
    ZSTD_CCtx_setParameter(context.get(), ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(context.get(), ZSTD_c_checksumFlag, 1);
  }
  std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> context{
      ZSTD_createCCtx_advanced(ZSTD_customMem{large_alloc_callback, large_free_callback, nullptr}),
      ZSTD_freeCCtx};
};
#endif

std::unique_ptr<DumpWriter> DumpWriter::create(std::unique_ptr<OutputFile> file, Status* status,
                                               int compression_level, uint32_t format_version) {
  const uint32_t version = format_version == 1 ? 1 : kDumpFormatVersion;
  std::unique_ptr<DumpWriter> writer(
      new DumpWriter(std::move(file), compression_level, version >= 2));
  uint8_t header[kDumpHeaderSize] = {};
  std::memcpy(header, kDumpMagic, sizeof(kDumpMagic));
  for (int i = 0; i < 4; ++i) header[8 + i] = (version >> (8 * i)) & 0xff;
  *status = writer->file_->write(header);
  if (!status->ok()) return nullptr;
  writer->written_ = sizeof(header);
  return writer;
}

std::unique_ptr<DumpWriter> DumpWriter::append_to(std::unique_ptr<OutputFile> file, uint64_t size) {
  std::unique_ptr<DumpWriter> writer(
      new DumpWriter(std::move(file), kDefaultCompressionLevel, /*compact_samples=*/true));
  writer->written_ = size;
  return writer;
}

DumpWriter::DumpWriter(std::unique_ptr<OutputFile> file, int level, bool compact_samples)
    : file_(std::move(file)),
      level_(level),
      compressor_(new Compressor(level)),
      compactor_(compact_samples ? new SampleCompactor : nullptr) {}

DumpWriter::~DumpWriter() { (void)close(); }

void DumpWriter::add_payload(RecordType type, std::span<const uint8_t> payload) {
  if (compactor_) {
    if (type == RecordType::kSample || type == RecordType::kSampleRepeat) {
      auto result = compactor_->add(type, payload, chunk_);
      if (result == SampleCompactor::Result::kChunkFull) {
        (void)flush();  // the chunk's stack or thread table is full: start the next chunk
        result = compactor_->add(type, payload, chunk_);
      }
      if (result == SampleCompactor::Result::kAdded) return;
      // Malformed, or no room even in a new chunk: written whole, as version 1 did, after the
      // batch so far (a repeat means "the thread's previous sample again": order matters).
      compactor_->end_batch(chunk_);
    } else if (type == RecordType::kThreadEnd) {
      ByteReader r(payload);
      uint64_t tid = 0;
      if (r.varint(tid)) compactor_->thread_ended(tid);
    } else if (type == RecordType::kEnd) {
      compactor_->end_batch(chunk_);  // the end record stays the last
    }
  }
  append_record(chunk_, type, payload);
}

size_t DumpWriter::pending_bytes() const {
  return chunk_.size() + (compactor_ ? compactor_->pending_bytes() : 0);
}

Status DumpWriter::flush() {
  if (closed_) return first_error_;
  if (compactor_) compactor_->end_batch(chunk_);
  if (chunk_.empty()) return first_error_;
#if defined(INPROF_NO_ZSTD)
  compressed_.clear();
  append_stored_frame(chunk_, compressed_);
  const size_t n = compressed_.size();
#else
  compressed_.resize(ZSTD_compressBound(chunk_.size()));
  ZSTD_CCtx* context = compressor_->context.get();
  const size_t n = context ? ZSTD_compress2(context, compressed_.data(), compressed_.size(),
                                            chunk_.data(), chunk_.size())
                           : ZSTD_compress(compressed_.data(), compressed_.size(), chunk_.data(),
                                           chunk_.size(), level_);
#endif
  chunk_.clear();
  // Whatever happens to this chunk, the next one must not refer to its stacks.
  if (compactor_) compactor_->start_chunk();
#if !defined(INPROF_NO_ZSTD)
  if (ZSTD_isError(n)) {
    record_error(Status::error(Status::Code::kOutputError,
                               std::string("zstd compression failed: ") + ZSTD_getErrorName(n)));
    return first_error_;
  }
#endif
  const Status wrote = file_->write(std::span<const uint8_t>(compressed_.data(), n));
  record_error(wrote);
  if (wrote.ok()) written_ += n;
  return first_error_;
}

Status DumpWriter::close() {
  if (closed_) return first_error_;
  (void)flush();
  closed_ = true;
  record_error(file_->close());
  return first_error_;
}

}  // namespace inprof::internal
