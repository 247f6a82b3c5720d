// Turns records into a dump file: a 16-byte header, then independent zstd frames, each holding
// whole records. A process killed mid-run leaves every complete frame readable. Samples and
// repeats are added as the sampler encoded them and written in the compact form of format
// version 2 (sample_compactor.h): a chunk's samples come together at its end.
#ifndef INPROF_LIB_DUMP_DUMP_WRITER_H_
#define INPROF_LIB_DUMP_DUMP_WRITER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "dump/dump_records.h"
#include "dump/sample_compactor.h"
#include "inprof/profiler.h"
#include "session/output_file.h"

namespace inprof::internal {

class DumpWriter {
 public:
  // zstd's level for the chunks; chosen by dump_encoding_benchmark's measurements (FORMAT.md).
  static constexpr int kDefaultCompressionLevel = 3;
  // Writes the header at once. `format_version` 1 writes every sample whole, as version 1
  // readers expect (for tests of old dumps); anything else writes the current version.
  static std::unique_ptr<DumpWriter> create(std::unique_ptr<OutputFile> file, Status* status,
                                            int compression_level = kDefaultCompressionLevel,
                                            uint32_t format_version = kDumpFormatVersion);
  // Continues an existing dump: chunks go after what `file` (opened to append) holds, no header.
  // `size` is what it holds (written() counts from there).
  static std::unique_ptr<DumpWriter> append_to(std::unique_ptr<OutputFile> file, uint64_t size = 0);
  ~DumpWriter();
  DumpWriter(const DumpWriter&) = delete;
  DumpWriter& operator=(const DumpWriter&) = delete;

  // Adds one record, already encoded, to the current chunk.
  void add_payload(RecordType type, std::span<const uint8_t> payload);
  // Encodes and adds one record.
  template <typename Record>
  void add(RecordType type, const Record& record) {
    ByteWriter w(&scratch_);
    encode(w, record);
    add_payload(type, w.view());
  }

  OutputFile& file() { return *file_; }
  // Bytes added to the current chunk, before compression.
  size_t pending_bytes() const;
  // Bytes the file holds: the header and every chunk written whole (a failed write stops it).
  uint64_t written() const { return written_; }
  // Compresses the current chunk into one zstd frame and writes it.
  Status flush();
  // Flushes and closes the file. The first error of the writer's life is reported.
  Status close();

 private:
  struct Compressor;  // zstd's context, reused for every chunk
  DumpWriter(std::unique_ptr<OutputFile> file, int level, bool compact_samples);
  void record_error(const Status& s) {
    if (!s.ok() && first_error_.ok()) first_error_ = s;
  }

  std::unique_ptr<OutputFile> file_;
  int level_;
  std::unique_ptr<Compressor> compressor_;
  std::unique_ptr<SampleCompactor> compactor_;  // null: samples are written whole (version 1)
  // Up to ~1 MiB each: from large_alloc (large_alloc.h), so that neither their growth nor their
  // release moves malloc's thresholds under the program.
  ByteBuffer chunk_;
#if defined(INPROF_NO_ZSTD)
  std::vector<uint8_t> compressed_;
#else
  ByteBuffer compressed_;
#endif
  std::vector<uint8_t> scratch_;
  Status first_error_;
  uint64_t written_ = 0;
  bool closed_ = false;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_DUMP_DUMP_WRITER_H_
