// A dump small enough to be read whole, read so: one buffer of the file's size, not zeroed, and
// one read() (the library's incremental reader slides a zero-filled 1 MiB window along the file,
// which cost a warm run of the symbol cache 0.4 ms on a 21 KB dump). Larger dumps, and files that
// are not regular, are left to read_dump_file_incrementally, whose memory stays at about one
// chunk: read_dump over these bytes delivers the same records and reports the same damage
// (tests/symbolicate/incremental_reader_test.cc).
#ifndef INPROF_TOOLS_SYMBOLICATE_DUMP_FILE_READ_H_
#define INPROF_TOOLS_SYMBOLICATE_DUMP_FILE_READ_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace inprof::symbolicate {

// Dumps up to this size are read whole.
inline constexpr size_t kWholeDumpReadLimit = size_t{8} << 20;

struct WholeDumpFile {
  std::unique_ptr<uint8_t[]> data;
  size_t size = 0;
  std::span<const uint8_t> bytes() const { return {data.get(), size}; }
};

// The bytes of the regular file `path` as they are at the end of the read (a file still being
// written is read to its end then), if it opens and holds at most `limit` bytes; else nothing.
std::optional<WholeDumpFile> read_small_dump_file(const std::string& path,
                                                  size_t limit = kWholeDumpReadLimit);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_DUMP_FILE_READ_H_
