// A zstd frame header may declare a window of up to 2 GiB, which a decoder allocates before it
// reads any content: a crafted dump could make symbolicate (or anything reading dumps) allocate
// that much per chunk. The reader refuses frames that want more than our writer ever uses.
#include <gtest/gtest.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameHeader, to check what the crafted frame asks
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "dump/dump_reader.h"
#include "dump/dump_writer.h"

namespace inprof::internal {
namespace {

struct CountSamples : DumpVisitor {
  size_t samples = 0;
  void on_sample(const SampleRecord&) override { ++samples; }
};

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
}

// Recompresses `content` into a frame whose header asks for a 2^window_log byte window: sizes
// unknown at the start (streamed), so zstd cannot shrink the window to fit the content.
std::vector<uint8_t> frame_with_window(const std::vector<uint8_t>& content, int window_log) {
  std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_windowLog, window_log);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  std::vector<uint8_t> out(ZSTD_compressBound(content.size()) + 64);
  ZSTD_outBuffer o{out.data(), out.size(), 0};
  ZSTD_inBuffer first{content.data(), content.size() / 2, 0};
  EXPECT_FALSE(ZSTD_isError(ZSTD_compressStream2(cctx.get(), &o, &first, ZSTD_e_continue)));
  ZSTD_inBuffer rest{content.data() + content.size() / 2, content.size() - content.size() / 2, 0};
  size_t left;
  do {
    left = ZSTD_compressStream2(cctx.get(), &o, &rest, ZSTD_e_end);
    EXPECT_FALSE(ZSTD_isError(left));
  } while (left != 0 && !ZSTD_isError(left));
  out.resize(o.pos);
  return out;
}

TEST(DumpWindowTest, ChunkDemandingAHugeWindowIsRefused) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("inprof-window-test-" + std::to_string(getpid()) + ".inprof"))
                               .string();
  {
    Status status;
    auto writer = DumpWriter::create(OutputFile::create(path, &status), &status);
    ASSERT_TRUE(writer) << status.message();
    writer->add(RecordType::kThreadStart, ThreadRecord{7, 0, kThreadMain, "main"});
    for (int chunk = 0; chunk < 3; ++chunk) {
      for (int i = 0; i < 40; ++i) {
        std::vector<uint8_t> payload;
        ByteWriter w(&payload);
        const uint64_t n = uint64_t(chunk) * 40 + i;
        const std::vector<uint64_t> frames = {0x1000 + n, 0x2000, 0x3000};
        encode_sample(w, 7, n * 1000000, std::nullopt, 0, frames, {});
        writer->add_payload(RecordType::kSample, payload);
      }
      ASSERT_TRUE(writer->flush().ok());
    }
    ASSERT_TRUE(writer->close().ok());
  }
  const std::vector<uint8_t> bytes = read_bytes(path);
  // The frames, found by their sizes (not by magic numbers, which compressed data may hold).
  std::vector<std::pair<size_t, size_t>> frames;
  for (size_t at = kDumpHeaderSize; at < bytes.size();) {
    const size_t size = ZSTD_findFrameCompressedSize(bytes.data() + at, bytes.size() - at);
    ASSERT_FALSE(ZSTD_isError(size));
    frames.emplace_back(at, size);
    at += size;
  }
  ASSERT_GE(frames.size(), 3u);
  {
    CountSamples all;
    ASSERT_TRUE(read_dump(bytes, all).ok);
    ASSERT_EQ(all.samples, 120u);
  }
  // The second frame, its content unchanged, recompressed to ask for a 128 MiB window.
  const auto [at, size] = frames[1];
  std::vector<uint8_t> content(ZSTD_getFrameContentSize(bytes.data() + at, size));
  ASSERT_EQ(ZSTD_decompress(content.data(), content.size(), bytes.data() + at, size),
            content.size());
  const std::vector<uint8_t> greedy = frame_with_window(content, 27);
  ZSTD_frameHeader header;
  ASSERT_EQ(ZSTD_getFrameHeader(&header, greedy.data(), greedy.size()), 0u);
  ASSERT_EQ(header.windowSize, uint64_t{1} << 27);
  std::vector<uint8_t> crafted(bytes.begin(), bytes.begin() + at);
  crafted.insert(crafted.end(), greedy.begin(), greedy.end());
  crafted.insert(crafted.end(), bytes.begin() + at + size, bytes.end());
  // Whole chunks are read or skipped: the crafted one is skipped, with a warning, from memory
  // and from a file alike; the others are read.
  CountSamples from_memory;
  const DumpReadResult r = read_dump(crafted, from_memory);
  ASSERT_TRUE(r.ok);
  EXPECT_FALSE(r.warnings.empty());
  EXPECT_LT(from_memory.samples, 120u);
  EXPECT_GE(from_memory.samples, 80u);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(crafted.data()), std::streamsize(crafted.size()));
  }
  for (auto* read : {&read_dump_file, &read_dump_file_incrementally}) {
    CountSamples from_file;
    const DumpReadResult rf = read(path, from_file);
    ASSERT_TRUE(rf.ok);
    EXPECT_FALSE(rf.warnings.empty());
    EXPECT_EQ(from_file.samples, from_memory.samples);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace inprof::internal
