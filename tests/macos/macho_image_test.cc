// The macOS module lister's reading of a loaded Mach-O image (platform/macos/macho_image_macos.h),
// on images built in memory: range and code ranges from the segments plus the slide, __PAGEZERO
// left out, LC_UUID as the build id, load commands read only within the image.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "macho_image_macos.h"

namespace inprof::internal {
namespace {

class ImageBuilder {
 public:
  ImageBuilder() : bytes_(kMachHeader64Size, 0) { put32(0, kMachOMagic64); }

  void segment(const char* name, uint64_t vmaddr, uint64_t vmsize, int32_t initprot) {
    const size_t at = begin_command(kLcSegment64, kSegmentCommand64Size);
    std::memcpy(&bytes_[at + 8], name, std::strlen(name));
    put64(at + 24, vmaddr);
    put64(at + 32, vmsize);
    put32(at + 60, static_cast<uint32_t>(initprot));
  }
  void uuid(uint8_t first) {
    const size_t at = begin_command(kLcUuid, 24);
    for (int i = 0; i < 16; ++i) bytes_[at + 8 + i] = static_cast<uint8_t>(first + i);
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  size_t begin_command(uint32_t cmd, uint32_t size) {
    const size_t at = bytes_.size();
    bytes_.resize(at + size, 0);
    put32(at, cmd);
    put32(at + 4, size);
    put32(16, get32(16) + 1);                                             // ncmds
    put32(20, static_cast<uint32_t>(bytes_.size() - kMachHeader64Size));  // sizeofcmds
    return at;
  }
  void put32(size_t at, uint32_t v) { std::memcpy(&bytes_[at], &v, 4); }
  void put64(size_t at, uint64_t v) { std::memcpy(&bytes_[at], &v, 8); }
  uint32_t get32(size_t at) {
    uint32_t v;
    std::memcpy(&v, &bytes_[at], 4);
    return v;
  }
  std::vector<uint8_t> bytes_;
};

TEST(MachOImageTest, RangesFromSegmentsPlusSlideAndUuidAsBuildId) {
  ImageBuilder image;
  image.segment("__PAGEZERO", 0, 0x100000000, 0);
  image.segment("__TEXT", 0x100000000, 0x4000, 5);  // r-x
  image.segment("__DATA", 0x100004000, 0x8000, 3);  // rw-
  image.uuid(0xA0);
  ModuleInfo m;
  ASSERT_TRUE(read_macho_image(image.bytes(), 0x10000, &m));
  EXPECT_EQ(m.start, 0x100010000u);
  EXPECT_EQ(m.end, 0x10001C000u);
  EXPECT_EQ(m.load_bias, 0x10000u);
  ASSERT_EQ(m.code_ranges.size(), 1u);
  EXPECT_EQ(m.code_ranges[0], std::make_pair(uint64_t{0x100010000}, uint64_t{0x100014000}));
  ASSERT_EQ(m.build_id.size(), 16u);
  EXPECT_EQ(m.build_id[0], 0xA0);
  EXPECT_EQ(m.build_id[15], 0xAF);
}

TEST(MachOImageTest, RefusesWhatIsNotA64BitImageAndStaysWithinIt) {
  ImageBuilder image;
  image.segment("__TEXT", 0x1000, 0x1000, 5);
  image.uuid(1);
  ModuleInfo m;
  std::vector<uint8_t> bytes = image.bytes();
  // Cut inside the UUID command: the segment is read, the truncated command is not.
  bytes.resize(bytes.size() - 4);
  ASSERT_TRUE(read_macho_image(bytes, 0, &m));
  EXPECT_TRUE(m.build_id.empty());
  bytes[0] ^= 1;  // not MH_MAGIC_64
  EXPECT_FALSE(read_macho_image(bytes, 0, &m));
  EXPECT_FALSE(read_macho_image(std::span<const uint8_t>(bytes.data(), 8), 0, &m));
  // A command claiming more bytes than the commands hold ends the walk.
  ImageBuilder lying;
  lying.segment("__TEXT", 0x1000, 0x1000, 5);
  uint32_t huge = 0x10000;
  std::memcpy(&lying.bytes()[kMachHeader64Size + 4], &huge, 4);
  EXPECT_FALSE(read_macho_image(lying.bytes(), 0, &m));
}

}  // namespace
}  // namespace inprof::internal
