// How a free recognizes a small sampled block without a lookup (docs/design/allocations.md,
// section 2). A small sampled allocation is made `offset` bytes larger than asked and handed out
// `offset` bytes into the allocator's block (large ones keep their size: see the interposer); the 8
// bytes just before the pointer handed out hold a tag:
//
//   bit 63        always 1
//   bits 48..62   kMagic
//   bits 32..47   the recording session's generation (0: the block was not recorded)
//   bits  0..31   offset (16, or the alignment asked for if larger)
//
// For any other block those 8 bytes are glibc's chunk header, the block's size, whose bit 63 is
// never set (glibc refuses sizes above PTRDIFF_MAX): the tag cannot be mistaken for one, and
// glibc's own free reads the same word first, so the test costs no extra cache line. Header-only,
// no allocation, no lock: the interposer calls it from inside free.
#ifndef INPROF_LIB_ALLOCATIONS_BLOCK_TAG_H_
#define INPROF_LIB_ALLOCATIONS_BLOCK_TAG_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace inprof::internal {

struct BlockTag {
  static constexpr uint64_t kTagBit = uint64_t(1) << 63;
  static constexpr uint64_t kMagic = 0x6A1C;  // 15 bits
  static constexpr uint64_t kMagicBits = (kMagic << 48) | kTagBit;
  static constexpr uint64_t kMagicMask = uint64_t(0xFFFF) << 48;
  // The space before the pointer handed out: the tag needs 8 bytes, glibc's alignment 16.
  static constexpr size_t kMinOffset = 16;
  // Larger alignments are not sampled (their offset would not fit, and nobody needs them).
  static constexpr size_t kMaxOffset = size_t(1) << 30;

  uint32_t offset = 0;
  uint16_t generation = 0;

  static uint64_t encode(uint32_t offset, uint16_t generation) {
    return kMagicBits | (uint64_t(generation) << 32) | offset;
  }
  // True, with `out` filled, if `word` is a tag.
  static bool decode(uint64_t word, BlockTag& out) {
    if ((word & kMagicMask) != kMagicBits) return false;
    out.offset = static_cast<uint32_t>(word);
    out.generation = static_cast<uint16_t>(word >> 32);
    return out.offset >= kMinOffset && out.offset <= kMaxOffset && out.offset % 16 == 0;
  }

  // The word just before `user` (memcpy: no alignment or aliasing assumption).
  static uint64_t word_before(const void* user) {
    uint64_t word;
    std::memcpy(&word, static_cast<const char*>(user) - sizeof(word), sizeof(word));
    return word;
  }
  static void write_before(void* user, uint64_t word) {
    std::memcpy(static_cast<char*>(user) - sizeof(word), &word, sizeof(word));
  }

  // The offset for a block aligned to `alignment` (0: the allocator's default), or 0 when such a
  // block is not to be tagged.
  static size_t offset_for(size_t alignment) {
    if (alignment <= kMinOffset) return kMinOffset;
    size_t offset = kMinOffset;
    while (offset < alignment && offset < kMaxOffset) offset <<= 1;  // glibc rounds up likewise
    return offset >= alignment ? offset : 0;
  }
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_ALLOCATIONS_BLOCK_TAG_H_
