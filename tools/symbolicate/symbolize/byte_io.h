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

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// A fast 64-bit checksum of the bytes: it tells damage from an intact file. Each 64-byte stripe
// goes into eight accumulators: a word's two halves multiplied (32 x 32 -> 64 bits) into its
// own, the word itself added to its neighbour's, so that no change of a word is lost to a zero
// product; the accumulators are mixed at the end. Additions only between stripes: with SSE2,
// two words an instruction and no chain of multiplications (the four-lane multiply-xorshift
// before ran at 6 GB/s, a third of decoding a warm run's unit files). The portable loop
// computes the same value.
inline uint64_t checksum_mix(uint64_t h) {
  h = (h ^ (h >> 33)) * 0xff51afd7ed558ccdull;
  h = (h ^ (h >> 33)) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

// `vector`: stripes with SSE2 where the machine has it; false only to test that both agree.
template <bool vector = true>
uint64_t fast_checksum_with(const void* data, uint64_t n) {
  static constexpr uint64_t kKey[8] = {
      0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull, 0x27d4eb2f165667c5ull,
      0x85ebca77c2b2ae63ull, 0xff51afd7ed558ccdull, 0xc4ceb9fe1a85ec53ull, 0x94d049bb133111ebull};
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t acc[8];
  for (int k = 0; k < 8; ++k) acc[k] = kKey[k] ^ n;
  uint64_t i = 0;
#if defined(__SSE2__)
  if constexpr (vector) {
    __m128i a[4], key[4];
    for (int k = 0; k < 4; ++k) {
      a[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(acc + 2 * k));
      key[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kKey + 2 * k));
    }
    for (; i + 64 <= n; i += 64) {
      for (int k = 0; k < 4; ++k) {
        const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 16 * k));
        const __m128i x = _mm_xor_si128(w, key[k]);
        const __m128i product = _mm_mul_epu32(x, _mm_shuffle_epi32(x, _MM_SHUFFLE(2, 3, 0, 1)));
        const __m128i swapped = _mm_shuffle_epi32(w, _MM_SHUFFLE(1, 0, 3, 2));
        a[k] = _mm_add_epi64(a[k], _mm_add_epi64(product, swapped));
      }
    }
    for (int k = 0; k < 4; ++k) _mm_storeu_si128(reinterpret_cast<__m128i*>(acc + 2 * k), a[k]);
  }
#endif
  for (; i + 64 <= n; i += 64) {
    for (int k = 0; k < 8; ++k) {
      uint64_t w, neighbour;
      std::memcpy(&w, p + i + 8 * k, 8);
      std::memcpy(&neighbour, p + i + 8 * (k ^ 1), 8);
      const uint64_t x = w ^ kKey[k];
      acc[k] += (x & 0xffffffffu) * (x >> 32) + neighbour;
    }
  }
  uint64_t h = n * 0x9e3779b97f4a7c15ull;
  for (int k = 0; k < 8; ++k) h = checksum_mix(h ^ acc[k]);
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = checksum_mix(h ^ w);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p + i, n - i);
  return checksum_mix(h ^ tail ^ (uint64_t(n - i) << 56));
}

inline uint64_t fast_checksum(const void* data, uint64_t n) { return fast_checksum_with(data, n); }

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_BYTE_IO_H_
