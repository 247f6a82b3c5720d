#include "compressed_chunk_check.h"

#include <fstream>
#include <iterator>
#include <vector>

#include "dump/dump_records.h"
#include "dump/stored_frames.h"

namespace inprof::symbolicate {
namespace {

constexpr uint32_t kZstdMagic = 0xFD2FB528;
constexpr size_t kMaxChunkSize = 256u << 20;  // as the reader's limit

uint32_t le32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24; }

}  // namespace

std::optional<std::string> find_compressed_chunk(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  const std::vector<uint8_t> file{std::istreambuf_iterator<char>(in),
                                  std::istreambuf_iterator<char>()};
  if (file.size() < internal::kDumpHeaderSize ||
      (le32(&file[12]) & internal::kDumpFlagRaw)) {  // a crash capture has no chunks
    return std::nullopt;
  }
  std::vector<uint8_t> content;
  for (size_t pos = internal::kDumpHeaderSize; pos + 4 <= file.size();) {
    size_t size = 0;
    const auto rest = std::span<const uint8_t>(file).subspan(pos);
    const internal::StoredFrameResult r =
        le32(&file[pos]) == kZstdMagic
            ? internal::read_stored_frame(rest, kMaxChunkSize, &size, &content)
            : internal::StoredFrameResult::kMalformed;
    if (r == internal::StoredFrameResult::kCompressed) {
      return "the chunk at offset " + std::to_string(pos) +
             " is zstd-compressed, and this Windows build of symbolicate has no zstd: it reads "
             "the uncompressed chunks Windows dumps are written with. Convert this dump with a "
             "Linux symbolicate";
    }
    pos += r == internal::StoredFrameResult::kOk ? size : 1;  // damage: the reader reports it
  }
  return std::nullopt;
}

}  // namespace inprof::symbolicate
