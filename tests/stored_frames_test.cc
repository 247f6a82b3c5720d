// Stored zstd frames (lib/dump/stored_frames.h): what a build without zstd writes must be an
// ordinary zstd frame — libzstd decodes it where it exists — and read back by our own reader.
#include "dump/stored_frames.h"

#include <gtest/gtest.h>

#if !defined(_WIN32)
#include <zstd.h>
#endif

#include <vector>

namespace inprof::internal {
namespace {

std::vector<uint8_t> pattern(size_t size) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(i * 131 + i / 977);
  return bytes;
}

// Sizes around the 128 KiB block limit, and the empty chunk.
const size_t kSizes[] = {0, 1, 1000, 128 * 1024 - 1, 128 * 1024, 128 * 1024 + 1, 300000};

TEST(StoredFramesTest, OurReaderReadsWhatWeWrite) {
  for (size_t size : kSizes) {
    const std::vector<uint8_t> content = pattern(size);
    std::vector<uint8_t> frame;
    append_stored_frame(content, frame);
    frame.push_back(0x42);  // whatever follows the frame is not part of it
    size_t frame_size = 0;
    std::vector<uint8_t> read;
    ASSERT_EQ(read_stored_frame(frame, 1 << 20, &frame_size, &read), StoredFrameResult::kOk);
    EXPECT_EQ(frame_size, frame.size() - 1) << size;
    EXPECT_EQ(read, content) << size;
  }
}

TEST(StoredFramesTest, ACutFrameIsIncompleteAndDamageIsMalformed) {
  std::vector<uint8_t> frame;
  append_stored_frame(pattern(200000), frame);
  size_t frame_size = 0;
  std::vector<uint8_t> read;
  for (size_t keep :
       {size_t(0), size_t(3), size_t(12), size_t(15), frame.size() / 2, frame.size() - 1}) {
    EXPECT_EQ(read_stored_frame(std::span<const uint8_t>(frame.data(), keep), 1 << 20, &frame_size,
                                &read),
              StoredFrameResult::kIncomplete)
        << keep;
  }
  std::vector<uint8_t> bad = frame;
  bad[0] ^= 1;  // magic number
  EXPECT_EQ(read_stored_frame(bad, 1 << 20, &frame_size, &read), StoredFrameResult::kMalformed);
  // More content than the caller accepts.
  EXPECT_EQ(read_stored_frame(frame, 1000, &frame_size, &read), StoredFrameResult::kMalformed);
}

#if !defined(_WIN32)
TEST(StoredFramesTest, LibzstdDecodesThem) {
  for (size_t size : kSizes) {
    const std::vector<uint8_t> content = pattern(size);
    std::vector<uint8_t> frame;
    append_stored_frame(content, frame);
    EXPECT_EQ(ZSTD_findFrameCompressedSize(frame.data(), frame.size()), frame.size()) << size;
    EXPECT_EQ(ZSTD_getFrameContentSize(frame.data(), frame.size()), size) << size;
    std::vector<uint8_t> out(size + 1);
    const size_t n = ZSTD_decompress(out.data(), out.size(), frame.data(), frame.size());
    ASSERT_FALSE(ZSTD_isError(n)) << ZSTD_getErrorName(n);
    out.resize(n);
    EXPECT_EQ(out, content) << size;
  }
}

TEST(StoredFramesTest, ACompressedFrameIsRecognisedAndNotRead) {
  const std::vector<uint8_t> content(100000, 7);
  std::vector<uint8_t> frame(ZSTD_compressBound(content.size()));
  frame.resize(ZSTD_compress(frame.data(), frame.size(), content.data(), content.size(), 3));
  size_t frame_size = 0;
  std::vector<uint8_t> read;
  EXPECT_EQ(read_stored_frame(frame, 1 << 20, &frame_size, &read), StoredFrameResult::kCompressed);
  EXPECT_EQ(frame_size, frame.size());
}
#endif

}  // namespace
}  // namespace inprof::internal
