#include "dump/stored_frames.h"

#include <algorithm>
#include <optional>

namespace inprof::internal {
namespace {

constexpr uint32_t kZstdFrameMagic = 0xFD2FB528;
constexpr size_t kMaxBlockSize = 128 * 1024;  // the format's largest block
// Frame header descriptor: an 8-byte content size (bits 7-6 = 3), a single segment (bit 5) and a
// content checksum (bit 2): no window descriptor, no dictionary. The checksum makes a damaged
// chunk detected and skipped whole, as a compressed one is, instead of read as wrong records.
constexpr uint8_t kStoredFrameDescriptor = 0xE4;

enum BlockType : uint32_t { kRawBlock = 0, kRleBlock = 1, kCompressedBlock = 2 };

void append_le(std::vector<uint8_t>& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

uint64_t read_le(const uint8_t* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t(p[i]) << (8 * i);
  return value;
}

// XXH64 (seed 0), the hash whose low 32 bits zstd stores as a frame's content checksum
// (RFC 8878, section 3.1.1; the algorithm as specified in xxHash's documentation).
constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ull;
constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ull;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
uint64_t xxh_round(uint64_t acc, uint64_t input) {
  return rotl(acc + input * kPrime2, 31) * kPrime1;
}
uint64_t xxh_merge(uint64_t acc, uint64_t lane) {
  return (acc ^ xxh_round(0, lane)) * kPrime1 + kPrime4;
}

uint64_t xxh64(std::span<const uint8_t> data) {
  const uint8_t* p = data.data();
  size_t n = data.size();
  uint64_t h;
  if (n >= 32) {
    uint64_t lanes[4] = {kPrime1 + kPrime2, kPrime2, 0, 0 - kPrime1};
    for (; n >= 32; n -= 32, p += 32) {
      for (int i = 0; i < 4; ++i) lanes[i] = xxh_round(lanes[i], read_le(p + 8 * i, 8));
    }
    h = rotl(lanes[0], 1) + rotl(lanes[1], 7) + rotl(lanes[2], 12) + rotl(lanes[3], 18);
    for (uint64_t lane : lanes) h = xxh_merge(h, lane);
  } else {
    h = kPrime5;
  }
  h += data.size();
  for (; n >= 8; n -= 8, p += 8) h = rotl(h ^ xxh_round(0, read_le(p, 8)), 27) * kPrime1 + kPrime4;
  if (n >= 4) {
    h = rotl(h ^ (read_le(p, 4) * kPrime1), 23) * kPrime2 + kPrime3;
    n -= 4;
    p += 4;
  }
  for (; n > 0; --n, ++p) h = rotl(h ^ (*p * kPrime5), 11) * kPrime1;
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  h *= kPrime3;
  return h ^ (h >> 32);
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
  append_le(out, xxh64(content) & 0xffffffffu, 4);
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
  const size_t size_bytes = size_flag == 0 && single_segment ? 1 : kContentSizeBytes[size_flag];
  const size_t header_rest = (single_segment ? 0 : 1) + kDictionaryIdBytes[descriptor & 3];
  if (data.size() - pos < header_rest + size_bytes) return StoredFrameResult::kIncomplete;
  pos += header_rest;
  // The declared content size, checked against the blocks below (2-byte sizes count from 256).
  std::optional<uint64_t> declared;
  if (size_bytes > 0) declared = read_le(&data[pos], static_cast<int>(size_bytes));
  if (size_bytes == 2) *declared += 256;
  pos += size_bytes;

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
  if (declared && !compressed && *declared != content->size()) {
    return StoredFrameResult::kMalformed;  // damaged
  }
  if (checksum) {
    if (data.size() - pos < 4) return StoredFrameResult::kIncomplete;
    if (!compressed && read_le(&data[pos], 4) != (xxh64(*content) & 0xffffffffu)) {
      return StoredFrameResult::kMalformed;  // damaged
    }
    pos += 4;
  }
  *frame_size = pos;
  if (compressed) {
    content->clear();
    return StoredFrameResult::kCompressed;
  }
  return StoredFrameResult::kOk;
}

}  // namespace inprof::internal
