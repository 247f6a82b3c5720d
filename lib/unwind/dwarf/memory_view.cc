#include "unwind/dwarf/memory_view.h"

#include <cstring>

namespace inprof::internal {

bool RegionView::add(uint64_t address, const void* bytes, uint64_t size) {
  if (count_ == kMaxRegions || address + size < address) return false;
  regions_[count_++] = Region{address, static_cast<const uint8_t*>(bytes), size};
  return true;
}

bool RegionView::read(uint64_t address, void* out, size_t size) const {
  for (int i = 0; i < count_; ++i) {
    const Region& r = regions_[i];
    if (address < r.address) continue;
    const uint64_t offset = address - r.address;
    if (offset > r.size || size > r.size - offset) continue;
    copy(out, r.bytes + offset, size);
    return true;
  }
  return false;
}

void RegionView::copy(void* out, const uint8_t* from, size_t size) const {
  std::memcpy(out, from, size);
}

bool MemoryReader::fixed(void* out, size_t size) {
  if (!ok_ || position_ > end_ || size > end_ - position_ || !view_->read(position_, out, size)) {
    ok_ = false;
    return false;
  }
  position_ += size;
  return true;
}

bool MemoryReader::uleb(uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 70; shift += 7) {  // at most 10 bytes
    uint8_t byte;
    if (!u8(&byte)) return false;
    if (shift < 64) result |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  ok_ = false;
  return false;
}

bool MemoryReader::sleb(int64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    uint8_t byte;
    if (!u8(&byte)) return false;
    if (shift < 64) result |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) {
      if (shift + 7 < 64 && (byte & 0x40)) result |= ~uint64_t{0} << (shift + 7);
      *v = static_cast<int64_t>(result);
      return true;
    }
  }
  ok_ = false;
  return false;
}

bool MemoryReader::skip(uint64_t n) {
  if (!ok_ || position_ > end_ || n > end_ - position_) {
    ok_ = false;
    return false;
  }
  position_ += n;
  return true;
}

bool MemoryReader::string(char* out, size_t capacity) {
  size_t n = 0;
  for (;;) {
    uint8_t c;
    if (!u8(&c)) return false;
    if (c == 0) break;
    if (n + 1 >= capacity) {
      ok_ = false;
      return false;
    }
    out[n++] = static_cast<char>(c);
  }
  if (capacity > 0) out[n] = '\0';
  return capacity > 0;
}

}  // namespace inprof::internal
