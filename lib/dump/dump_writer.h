// Turns records into a dump file: a 16-byte header, then independent zstd frames, each holding
// whole records. A process killed mid-run leaves every complete frame readable.
#ifndef INPROF_LIB_DUMP_DUMP_WRITER_H_
#define INPROF_LIB_DUMP_DUMP_WRITER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "dump/dump_records.h"
#include "inprof/profiler.h"
#include "output_file.h"

namespace inprof::internal {

class DumpWriter {
 public:
  // Writes the header at once. `compression_level` is zstd's.
  static std::unique_ptr<DumpWriter> create(std::unique_ptr<OutputFile> file, Status* status,
                                            int compression_level = 3);
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

  size_t pending_bytes() const { return chunk_.size(); }
  // Compresses the current chunk into one zstd frame and writes it.
  Status flush();
  // Flushes and closes the file. The first error of the writer's life is reported.
  Status close();

 private:
  explicit DumpWriter(std::unique_ptr<OutputFile> file, int level);

  std::unique_ptr<OutputFile> file_;
  int level_;
  std::vector<uint8_t> chunk_;
  std::vector<uint8_t> compressed_;
  std::vector<uint8_t> scratch_;
  Status first_error_;
  bool closed_ = false;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_DUMP_DUMP_WRITER_H_
