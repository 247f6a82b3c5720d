#include "dump/stored_frames.h"

#include <algorithm>

namespace inprof::internal {
namespace {

constexpr uint32_t kZstdFrameMagic = 0xFD2FB528;
constexpr size_t kMaxBlockSize = 128 * 1024;  // the format's largest block
// Frame header descriptor: an 8-byte content size (bits 7-6 = 3) and a single segment (bit 5):
// no window descriptor, no dictionary, no checksum.
constexpr uint8_t kStoredFrameDescriptor = 0xE0;

enum BlockType : uint32_t { kRawBlock = 0, kRleBlock = 1, kCompressedBlock = 2 };

void append_le(std::vector<uint8_t>& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

uint64_t read_le(const uint8_t* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t(p[i]) << (8 * i);
  return value;
}

}  // namespace

void append_stored_frame(std::span<const uint8_t> content, std::vector<uint8_t>& out) {
  append_le(out, kZstdFrameMagic, 4);
  out.push_back(kStoredFrameDescriptor);
  append_le(out, content.size(), 8);
  size_t pos = 0;
  do {  // at least one block: an empty frame still has its last block
    const size_t size = std::min(content.size() - pos, kMaxBlockSize);
    const bool last = pos + size == content.size();
    append_le(out, (last ? 1u : 0u) | (kRawBlock << 1) | (uint32_t(size) << 3), 3);
    out.insert(out.end(), content.begin() + pos, content.begin() + pos + size);
    pos += size;
  } while (pos < content.size());
}

StoredFrameResult read_stored_frame(std::span<const uint8_t> data, size_t max_content,
                                    size_t* frame_size, std::vector<uint8_t>* content) {
  content->clear();
  if (data.size() < 4) return StoredFrameResult::kIncomplete;
  if (read_le(data.data(), 4) != kZstdFrameMagic) return StoredFrameResult::kMalformed;
  size_t pos = 4;
  if (pos >= data.size()) return StoredFrameResult::kIncomplete;
  const uint8_t descriptor = data[pos++];
  if (descriptor & 0x08) return StoredFrameResult::kMalformed;  // reserved bit
  const unsigned size_flag = descriptor >> 6;
  const bool single_segment = descriptor & 0x20;
  const bool checksum = descriptor & 0x04;
  static constexpr size_t kDictionaryIdBytes[4] = {0, 1, 2, 4};
  static constexpr size_t kContentSizeBytes[4] = {0, 2, 4, 8};
  const size_t header_rest = (single_segment ? 0 : 1) + kDictionaryIdBytes[descriptor & 3] +
                             (size_flag == 0 && single_segment ? 1 : kContentSizeBytes[size_flag]);
  if (data.size() - pos < header_rest) return StoredFrameResult::kIncomplete;
  pos += header_rest;

  bool compressed = false;
  for (;;) {
    if (data.size() - pos < 3) return StoredFrameResult::kIncomplete;
    const auto header = static_cast<uint32_t>(read_le(&data[pos], 3));
    pos += 3;
    const bool last = header & 1;
    const uint32_t type = (header >> 1) & 3;
    const size_t size = header >> 3;
    if (size > kMaxBlockSize) return StoredFrameResult::kMalformed;
    const size_t stored = type == kRleBlock ? 1 : size;  // an RLE block stores its one byte
    if (type > kCompressedBlock) return StoredFrameResult::kMalformed;
    if (data.size() - pos < stored) return StoredFrameResult::kIncomplete;
    if (type == kCompressedBlock) {
      compressed = true;
    } else if (!compressed) {
      if (content->size() + size > max_content) return StoredFrameResult::kMalformed;
      if (type == kRawBlock) {
        content->insert(content->end(), data.begin() + pos, data.begin() + pos + size);
      } else {
        content->insert(content->end(), size, data[pos]);
      }
    }
    pos += stored;
    if (last) break;
  }
  if (checksum) {
    if (data.size() - pos < 4) return StoredFrameResult::kIncomplete;
    pos += 4;  // XXH64 of the content: checking it would need xxHash; chunks are parsed strictly
  }
  *frame_size = pos;
  if (compressed) {
    content->clear();
    return StoredFrameResult::kCompressed;
  }
  return StoredFrameResult::kOk;
}

}  // namespace inprof::internal
