// Bytes at known addresses, read with every access bounds-checked: what the CFI reader parses.
// In a profiled process the view is a module's loaded segments; in tests, plain buffers.
#ifndef INPROF_LIB_DWARF_MEMORY_VIEW_H_
#define INPROF_LIB_DWARF_MEMORY_VIEW_H_

#include <cstddef>
#include <cstdint>

namespace inprof::internal {

class MemoryView {
 public:
  virtual ~MemoryView() = default;
  // Copies [address, address + size) into `out` if all of it is in the view.
  virtual bool read(uint64_t address, void* out, size_t size) const = 0;
};

// A view over up to kMaxRegions byte ranges, each at an address of its own (no allocation).
class RegionView : public MemoryView {
 public:
  static constexpr int kMaxRegions = 16;
  // False when full (the region is then not added).
  bool add(uint64_t address, const void* bytes, uint64_t size);
  bool read(uint64_t address, void* out, size_t size) const override;

 protected:
  // How bytes are copied out: memcpy here; the Linux provider copies module memory its own way.
  virtual void copy(void* out, const uint8_t* from, size_t size) const;

 private:
  struct Region {
    uint64_t address;
    const uint8_t* bytes;
    uint64_t size;
  };
  Region regions_[kMaxRegions] = {};
  int count_ = 0;
};

// Reads values in order from [position, end) of a view. The first failed read (out of bounds,
// malformed LEB128) makes this and every later read fail.
class MemoryReader {
 public:
  MemoryReader(const MemoryView& view, uint64_t position, uint64_t end)
      : view_(&view), position_(position), end_(end) {}

  bool u8(uint8_t* v) { return fixed(v, 1); }
  bool u16(uint16_t* v) { return fixed(v, 2); }
  bool u32(uint32_t* v) { return fixed(v, 4); }
  bool u64(uint64_t* v) { return fixed(v, 8); }
  bool uleb(uint64_t* v);
  bool sleb(int64_t* v);
  bool skip(uint64_t n);
  // A C string up to its NUL; fails if it needs more than `capacity` bytes with the NUL.
  bool string(char* out, size_t capacity);

  uint64_t position() const { return position_; }
  uint64_t end() const { return end_; }
  bool at_end() const { return position_ >= end_; }
  bool ok() const { return ok_; }
  void fail() { ok_ = false; }
  const MemoryView& view() const { return *view_; }

 private:
  // Little-endian hosts only (x86-64, aarch64), like the data the reader parses.
  bool fixed(void* out, size_t size);

  const MemoryView* view_;
  uint64_t position_;
  uint64_t end_;
  bool ok_ = true;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_DWARF_MEMORY_VIEW_H_
