// What a loaded Mach-O image says about itself, read from its header and load commands in
// memory: its address range (segments plus dyld's slide), executable ranges and LC_UUID (the
// build id symbolicate matches a .dSYM by). File-format facts only, no OS call: tested on Linux
// with images built in memory.
#ifndef INPROF_PLATFORM_MACOS_MACHO_IMAGE_MACOS_H_
#define INPROF_PLATFORM_MACOS_MACHO_IMAGE_MACOS_H_

#include <cstdint>
#include <span>

#include "sampling/module_lister.h"

namespace inprof::internal {

inline constexpr uint32_t kMachOMagic64 = 0xfeedfacf;  // MH_MAGIC_64
inline constexpr uint32_t kLcSegment64 = 0x19;
inline constexpr uint32_t kLcUuid = 0x1b;
inline constexpr int32_t kVmProtExecute = 4;
inline constexpr size_t kMachHeader64Size = 32;  // mach_header_64
inline constexpr size_t kSegmentCommand64Size = 72;

// Fills `out` (range, load bias = slide, code ranges, build id) from the image whose header and
// load commands are `image` (at least the header; the commands are read only as far as `image`
// reaches). False if it is not a 64-bit Mach-O image of this byte order.
bool read_macho_image(std::span<const uint8_t> image, int64_t slide, ModuleInfo* out);

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_MACOS_MACHO_IMAGE_MACOS_H_
