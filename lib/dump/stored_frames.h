// zstd frames that store their content uncompressed — "raw" blocks of the zstd format (RFC 8878,
// section 3.1.1.2) — written and read without the zstd library. A build without zstd (Debian
// has none for MinGW-w64) writes its dump chunks this way: the file is an ordinary dump that
// every reader decodes (libzstd reads these frames like any other), and it keeps the chunk
// guarantees of FORMAT.md (a cut or damaged chunk costs only that chunk).
#ifndef INPROF_LIB_DUMP_STORED_FRAMES_H_
#define INPROF_LIB_DUMP_STORED_FRAMES_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace inprof::internal {

// Appends one frame holding `content` to `out`.
void append_stored_frame(std::span<const uint8_t> content, std::vector<uint8_t>& out);

enum class StoredFrameResult {
  kOk,          // `content` holds the frame's bytes
  kIncomplete,  // the data ends inside the frame
  kMalformed,   // not a zstd frame, or a damaged one
  kCompressed,  // a valid frame with compressed blocks: only libzstd decodes it
};

// Reads the zstd frame at the start of `data`. On kOk and kCompressed, `frame_size` is its
// length in `data`. Content beyond `max_content` bytes is refused as malformed.
StoredFrameResult read_stored_frame(std::span<const uint8_t> data, size_t max_content,
                                    size_t* frame_size, std::vector<uint8_t>* content);

}  // namespace inprof::internal

#endif  // INPROF_LIB_DUMP_STORED_FRAMES_H_
