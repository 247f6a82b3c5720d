// The Windows symbolicate refuses a dump with zstd-compressed chunks as a whole (it has no zstd)
// rather than converting it with chunks missing, and accepts the stored chunks Windows writes.
#include "windows/compressed_chunk_check.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "dump/dump_records.h"
#include "dump/stored_frames.h"

namespace {

using inprof::symbolicate::find_compressed_chunk;

// A dump header, then one stored chunk; `compressed` adds a chunk with a compressed block.
std::vector<uint8_t> dump_bytes(bool compressed) {
  std::vector<uint8_t> bytes(std::begin(inprof::internal::kDumpMagic),
                             std::end(inprof::internal::kDumpMagic));
  for (uint32_t v : {inprof::internal::kDumpFormatVersion, 0u}) {
    for (int b = 0; b < 4; ++b) bytes.push_back(uint8_t(v >> (8 * b)));
  }
  const std::vector<uint8_t> content(100, 7);
  inprof::internal::append_stored_frame(content, bytes);
  if (compressed) {
    // Frame magic, descriptor (8-byte content size, single segment), the size, then one last
    // block of type 2 (compressed) holding 4 bytes.
    const uint8_t frame[] = {0x28, 0xb5, 0x2f, 0xfd, 0xe0, 100, 0, 0, 0, 0,
                             0,    0,    0,    0x25, 0,    0,   1, 2, 3, 4};
    bytes.insert(bytes.end(), std::begin(frame), std::end(frame));
  }
  return bytes;
}

std::string write_file(const std::string& name, const std::vector<uint8_t>& bytes) {
  std::ofstream(name, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  return name;
}

TEST(CompressedChunkCheck, RefusesACompressedChunkAndSaysWhere) {
  const std::vector<uint8_t> bytes = dump_bytes(true);
  const std::string path = write_file("compressed_chunk.inprof", bytes);
  std::optional<std::string> why = find_compressed_chunk(path);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("zstd-compressed"), std::string::npos) << *why;
  EXPECT_NE(why->find("offset " + std::to_string(bytes.size() - 20)), std::string::npos) << *why;
  std::remove(path.c_str());
}

TEST(CompressedChunkCheck, AcceptsStoredChunks) {
  const std::string path = write_file("stored_chunk.inprof", dump_bytes(false));
  EXPECT_FALSE(find_compressed_chunk(path));
  std::remove(path.c_str());
}

}  // namespace
