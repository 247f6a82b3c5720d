#include "macho_image_macos.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace inprof::internal {
namespace {

template <typename T>
T load(std::span<const uint8_t> bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

}  // namespace

bool read_macho_image(std::span<const uint8_t> image, int64_t slide, ModuleInfo* out) {
  if (image.size() < kMachHeader64Size || load<uint32_t>(image, 0) != kMachOMagic64) return false;
  const uint32_t ncmds = load<uint32_t>(image, 16);
  const uint32_t sizeofcmds = load<uint32_t>(image, 20);
  const size_t end =
      kMachHeader64Size + std::min<size_t>(sizeofcmds, image.size() - kMachHeader64Size);
  uint64_t low = std::numeric_limits<uint64_t>::max(), high = 0;
  out->build_id.clear();
  out->code_ranges.clear();
  size_t offset = kMachHeader64Size;
  for (uint32_t i = 0; i < ncmds && end - offset >= 8; ++i) {
    const uint32_t cmd = load<uint32_t>(image, offset);
    const uint32_t cmdsize = load<uint32_t>(image, offset + 4);
    if (cmdsize < 8 || cmdsize > end - offset) break;
    if (cmd == kLcSegment64 && cmdsize >= kSegmentCommand64Size) {
      const uint64_t vmaddr = load<uint64_t>(image, offset + 24);
      const uint64_t vmsize = load<uint64_t>(image, offset + 32);
      const int32_t initprot = load<int32_t>(image, offset + 60);
      // __PAGEZERO (no access, nothing mapped) and empty segments are not part of the image.
      if (initprot != 0 && vmsize != 0) {
        const uint64_t begin = vmaddr + static_cast<uint64_t>(slide);
        low = std::min(low, begin);
        high = std::max(high, begin + vmsize);
        if (initprot & kVmProtExecute) out->code_ranges.emplace_back(begin, begin + vmsize);
      }
    } else if (cmd == kLcUuid && cmdsize >= 24) {
      out->build_id.assign(image.begin() + offset + 8, image.begin() + offset + 24);
    }
    offset += cmdsize;
  }
  if (high == 0) return false;
  out->start = low;
  out->end = high;
  out->load_bias = static_cast<uint64_t>(slide);
  out->file_offset = 0;
  return true;
}

}  // namespace inprof::internal
