// Hand-built .eh_frame and .eh_frame_hdr bytes for the parser's tests.
#ifndef INPROF_TESTS_EH_FRAME_EH_FRAME_BUILDER_H_
#define INPROF_TESTS_EH_FRAME_EH_FRAME_BUILDER_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace inprof::internal::testing {

struct Bytes {
  std::vector<uint8_t> b;

  size_t size() const { return b.size(); }
  Bytes& u8(uint8_t v) {
    b.push_back(v);
    return *this;
  }
  Bytes& raw(const void* p, size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    b.insert(b.end(), c, c + n);
    return *this;
  }
  Bytes& u16(uint16_t v) { return raw(&v, 2); }
  Bytes& u32(uint32_t v) { return raw(&v, 4); }
  Bytes& u64(uint64_t v) { return raw(&v, 8); }
  Bytes& uleb(uint64_t v) {
    do {
      uint8_t byte = v & 0x7f;
      v >>= 7;
      u8(byte | (v ? 0x80 : 0));
    } while (v);
    return *this;
  }
  Bytes& sleb(int64_t v) {
    for (;;) {
      uint8_t byte = v & 0x7f;
      v >>= 7;
      const bool done = (v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40));
      u8(byte | (done ? 0 : 0x80));
      if (done) return *this;
    }
  }
  Bytes& str(const std::string& s) { return raw(s.c_str(), s.size() + 1); }
  Bytes& append(const Bytes& o) { return raw(o.b.data(), o.b.size()); }
  void put_u32(size_t at, uint32_t v) { std::memcpy(&b[at], &v, 4); }
};

// CIE fields the tests vary.
struct CieSpec {
  std::string augmentation = "zR";
  uint8_t version = 1;
  uint64_t code_alignment = 1;
  int64_t data_alignment = -8;
  uint64_t return_address_register = 16;
  uint8_t fde_encoding = 0x1b;  // pcrel | sdata4
  uint8_t personality_encoding = 0x9b;
  Bytes instructions;
};

// .eh_frame contents laid out at `base`: CIEs and FDEs appended in order, then a terminator.
class EhFrameBuilder {
 public:
  explicit EhFrameBuilder(uint64_t base) : base_(base) {}

  // Returns the CIE's address.
  uint64_t add_cie(const CieSpec& spec) {
    const size_t start = out_.size();
    Bytes body;
    body.u32(0).u8(spec.version).str(spec.augmentation);
    body.uleb(spec.code_alignment).sleb(spec.data_alignment);
    if (spec.version == 1) {
      body.u8(static_cast<uint8_t>(spec.return_address_register));
    } else {
      body.uleb(spec.return_address_register);
    }
    if (!spec.augmentation.empty() && spec.augmentation[0] == 'z') {
      Bytes aug;
      for (char c : spec.augmentation.substr(1)) {
        if (c == 'R') aug.u8(spec.fde_encoding);
        if (c == 'L') aug.u8(0x1b);
        if (c == 'P') aug.u8(spec.personality_encoding).u32(0x1234);
      }
      body.uleb(aug.size()).append(aug);
    }
    body.append(spec.instructions);
    while ((body.size() + 4) % 8) body.u8(0);  // DW_CFA_nop padding
    out_.u32(static_cast<uint32_t>(body.size())).append(body);
    cies_.push_back({base_ + start, spec});
    return base_ + start;
  }

  // An FDE for [begin, begin + range) under the CIE at `cie`; pointers as that CIE encodes them
  // (pcrel|sdata4, udata4, udata8 or uleb128 here). Returns the FDE's address.
  uint64_t add_fde(uint64_t cie, uint64_t begin, uint64_t range, const Bytes& instructions,
                   size_t augmentation_bytes = 0, bool pad = true) {
    const CieSpec* spec = nullptr;
    for (auto& c : cies_) {
      if (c.first == cie) spec = &c.second;
    }
    const size_t start = out_.size();
    const uint64_t id_field = base_ + start + 4;
    Bytes body;
    body.u32(static_cast<uint32_t>(id_field - cie));
    const uint64_t field = id_field + 4;
    switch (spec->fde_encoding & 0x0f) {
      case 0x0b:
        body.u32(static_cast<uint32_t>((spec->fde_encoding & 0x10) ? begin - field : begin));
        body.u32(static_cast<uint32_t>(range));
        break;
      case 0x03:
        body.u32(static_cast<uint32_t>(begin)).u32(static_cast<uint32_t>(range));
        break;
      case 0x01:
        body.uleb(begin).uleb(range);
        break;
      default:
        body.u64(begin).u64(range);
    }
    if (spec->augmentation[0] == 'z') {
      body.uleb(augmentation_bytes);
      for (size_t i = 0; i < augmentation_bytes; ++i) body.u8(0);
    }
    body.append(instructions);
    while (pad && (body.size() + 4) % 8) body.u8(0);
    out_.u32(static_cast<uint32_t>(body.size())).append(body);
    fdes_.push_back({begin, base_ + start});
    return base_ + start;
  }

  // The section with its terminator.
  std::vector<uint8_t> finish() {
    Bytes done = out_;
    done.u32(0);
    return done.b;
  }

  // A .eh_frame_hdr at `hdr` for this .eh_frame: a sorted datarel|sdata4 table, unless
  // `table_encoding` says otherwise.
  std::vector<uint8_t> header(uint64_t hdr, uint8_t table_encoding = 0x3b) const {
    Bytes h;
    h.u8(1).u8(0x1b).u8(0x03).u8(table_encoding);
    h.u32(static_cast<uint32_t>(base_ - (hdr + 4)));
    auto sorted = fdes_;
    std::sort(sorted.begin(), sorted.end());
    h.u32(static_cast<uint32_t>(sorted.size()));
    for (auto& [begin, fde] : sorted) {
      if (table_encoding == 0x3b) {
        h.u32(static_cast<uint32_t>(begin - hdr)).u32(static_cast<uint32_t>(fde - hdr));
      } else {  // uleb128: a table no binary search can index
        h.uleb(begin).uleb(fde);
      }
    }
    return h.b;
  }

 private:
  uint64_t base_;
  Bytes out_;
  std::vector<std::pair<uint64_t, CieSpec>> cies_;
  std::vector<std::pair<uint64_t, uint64_t>> fdes_;
};

}  // namespace inprof::internal::testing

#endif  // INPROF_TESTS_EH_FRAME_EH_FRAME_BUILDER_H_
