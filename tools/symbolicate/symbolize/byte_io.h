// Little helpers that write and read the symbol cache's binary files (symbol_cache_file.cc,
// module_index_file.cc): fixed-width integers in the machine's order, length-prefixed bytes, and
// variable-length integers and a fast checksum. A Reader never reads past its input: every call
// says whether it could.
#ifndef INPROF_TOOLS_SYMBOLICATE_BYTE_IO_H_
#define INPROF_TOOLS_SYMBOLICATE_BYTE_IO_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace inprof::symbolicate {

class ByteWriter {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { raw(&v, sizeof v); }
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void bytes(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  std::string& out() { return out_; }

 private:
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  bool u8(uint8_t* v) { return raw(v, 1); }
  bool u32(uint32_t* v) { return raw(v, sizeof *v); }
  bool u64(uint64_t* v) { return raw(v, sizeof *v); }
  bool bytes(std::string_view* s) {
    uint32_t n;
    if (!u32(&n) || n > in_.size() - pos_) return false;
    *s = in_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  // The next `n` bytes.
  bool take(uint64_t n, std::string_view* s) {
    if (n > left()) return false;
    *s = in_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  size_t left() const { return in_.size() - pos_; }
  size_t position() const { return pos_; }

 private:
  bool raw(void* v, size_t n) {
    if (n > left()) return false;
    std::memcpy(v, in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  std::string_view in_;
  size_t pos_ = 0;
};

// Unsigned LEB128: 7 bits a byte, low first (line rows, packed_line_table.h).
inline void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// False when the bytes end before the integer does, or it has more than 64 bits.
inline bool get_varint(const unsigned char*& p, const unsigned char* end, uint64_t* v) {
  uint64_t out = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    const unsigned char b = *p++;
    out |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = out;
      return true;
    }
  }
  return false;
}

// A fast 64-bit checksum of the bytes: it tells damage from an intact file. Four independent
// lanes of 8-byte words, so that the multiplications overlap (one lane took 15 % of a warm run
// over a 28 MB debug image).
inline uint64_t fast_checksum(const void* data, uint64_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t lane[4] = {0x9e3779b97f4a7c15ull ^ n, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull,
                      0x27d4eb2f165667c5ull};
  uint64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * k, 8);
      lane[k] = (lane[k] ^ w) * 0xff51afd7ed558ccdull;
      lane[k] ^= lane[k] >> 29;
    }
  }
  uint64_t h = lane[0];
  for (int k = 1; k < 4; ++k) h = (h ^ lane[k]) * 0xc4ceb9fe1a85ec53ull;
  for (; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h ^ (h >> 32);
}

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_BYTE_IO_H_
