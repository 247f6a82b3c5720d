// Little building blocks of the dump encoding: LEB128 varints, zig-zag signed values and
// length-prefixed strings, written into a bounded buffer and read back with every read checked.
#ifndef INPROF_LIB_DUMP_BYTE_IO_H_
#define INPROF_LIB_DUMP_BYTE_IO_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace inprof::internal {

inline uint64_t zigzag_encode(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t zigzag_decode(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// Writes into a fixed span (no allocation: usable on the sampler's and markers' hot paths) or,
// when given a vector, grows it. A write past a fixed span's end sets overflowed() and is
// discarded. Both kinds share one fast path: check room, store.
class ByteWriter {
 public:
  explicit ByteWriter(std::span<uint8_t> fixed) : data_(fixed.data()), capacity_(fixed.size()) {}
  // The vector's size follows what was written; its capacity may run ahead.
  explicit ByteWriter(std::vector<uint8_t>* growable) : growable_(growable) {
    growable_->resize(std::max<size_t>(growable_->capacity(), 64));
    data_ = growable_->data();
    capacity_ = growable_->size();
  }
  ~ByteWriter() {
    if (growable_) growable_->resize(size_);
  }
  ByteWriter(const ByteWriter&) = delete;
  ByteWriter& operator=(const ByteWriter&) = delete;

  void u8(uint8_t v) {
    if (room(1)) data_[size_++] = v;
  }
  __attribute__((always_inline)) void varint(uint64_t v) {
    if (!room(10)) return;
    while (v >= 0x80) {
      data_[size_++] = static_cast<uint8_t>(v) | 0x80;
      v >>= 7;
    }
    data_[size_++] = static_cast<uint8_t>(v);
  }
  void svarint(int64_t v) { varint(zigzag_encode(v)); }
  void bytes(std::span<const uint8_t> b) {
    varint(b.size());
    raw(b.data(), b.size());
  }
  void string(std::string_view s) {
    varint(s.size());
    raw(s.data(), s.size());
  }
  void raw(const void* p, size_t n) {
    if (n == 0 || !room(n)) return;
    std::memcpy(data_ + size_, p, n);
    size_ += n;
  }

  // Fast path for a record whose size has a known bound: room for `max` bytes, written through
  // the returned pointer without further checks, then commit(end). Null (and overflowed) if the
  // room is not there.
  uint8_t* reserve(size_t max) { return room(max) ? data_ + size_ : nullptr; }
  void commit(const uint8_t* end) { size_ = static_cast<size_t>(end - data_); }

  bool overflowed() const { return overflowed_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> view() const { return {data_, size_}; }

 private:
  __attribute__((always_inline)) bool room(size_t n) {
    if (capacity_ - size_ >= n && !overflowed_) return true;
    return grow(n);
  }
  bool grow(size_t n) {
    if (!growable_ || overflowed_) {
      overflowed_ = true;
      return false;
    }
    growable_->resize(std::max(capacity_ * 2, size_ + n));
    data_ = growable_->data();
    capacity_ = growable_->size();
    return true;
  }

  uint8_t* data_ = nullptr;
  size_t capacity_ = 0;
  size_t size_ = 0;
  bool overflowed_ = false;
  std::vector<uint8_t>* growable_ = nullptr;
};

// Unchecked LEB128 store for ByteWriter::reserve() users; advances `p`.
__attribute__((always_inline)) inline void put_varint(uint8_t*& p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v) | 0x80;
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
}

// Appends a LEB128 varint to a vector (ByteWriter writes from the vector's start).
template <class Allocator>
inline void append_varint(std::vector<uint8_t, Allocator>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v) | 0x80);
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

// Reads what ByteWriter wrote. Every accessor returns false (and stays failed) on a read past the
// end or a malformed varint, so a corrupt record can never make the reader run off its buffer.
class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> data) : data_(data) {}

  bool u8(uint8_t& out) {
    if (failed_ || pos_ >= data_.size()) return fail();
    out = data_[pos_++];
    return true;
  }
  bool varint(uint64_t& out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t byte;
      if (!u8(byte)) return false;
      if (shift == 63 && byte > 1) return fail();
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) {
        out = v;
        return true;
      }
    }
    return fail();
  }
  bool svarint(int64_t& out) {
    uint64_t v;
    if (!varint(v)) return false;
    out = zigzag_decode(v);
    return true;
  }
  bool bytes(std::vector<uint8_t>& out, size_t max_size) {
    uint64_t n;
    if (!varint(n) || n > max_size || n > remaining()) return fail();
    out.assign(data_.begin() + pos_, data_.begin() + pos_ + n);
    pos_ += n;
    return true;
  }
  bool string(std::string& out, size_t max_size) {
    uint64_t n;
    if (!varint(n) || n > max_size || n > remaining()) return fail();
    out.assign(reinterpret_cast<const char*>(data_.data()) + pos_, n);
    pos_ += n;
    return true;
  }
  bool skip(size_t n) {
    if (failed_ || n > remaining()) return fail();
    pos_ += n;
    return true;
  }
  std::span<const uint8_t> take(size_t n) {
    if (!skip(n)) return {};
    return data_.subspan(pos_ - n, n);
  }

  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }
  bool failed() const { return failed_; }

 private:
  bool fail() {
    failed_ = true;
    return false;
  }
  std::span<const uint8_t> data_;
  size_t pos_ = 0;
  bool failed_ = false;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_DUMP_BYTE_IO_H_
