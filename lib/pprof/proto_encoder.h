// A protocol buffers encoder for the few wire types profile.proto uses (varint and
// length-delimited), written by hand so that the pprof output needs no protobuf library. A
// message is built bottom-up: a nested message is encoded into its own ProtoEncoder, then added
// to its parent as bytes. Used by symbolicate's pprof writer and by the library's own
// (pprof_builder.h), which serves pull-mode scrapes.
#ifndef INPROF_LIB_PPROF_PROTO_ENCODER_H_
#define INPROF_LIB_PPROF_PROTO_ENCODER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace inprof::internal {

class ProtoEncoder {
 public:
  // A varint field (int64, uint64, bool); zero is left out, as proto3 does.
  void add_varint(uint32_t field, uint64_t value) {
    if (!value) return;
    tag(field, 0);
    varint(value);
  }
  void add_bool(uint32_t field, bool value) { add_varint(field, value ? 1 : 0); }
  // A length-delimited field (string, bytes, nested message), written even when empty: a
  // repeated string such as the string table needs its empty entries.
  void add_bytes(uint32_t field, std::string_view bytes) {
    tag(field, 2);
    varint(bytes.size());
    out_.append(bytes);
  }
  void add_message(uint32_t field, const ProtoEncoder& message) { add_bytes(field, message.out_); }
  // A packed repeated varint field; nothing when empty.
  void add_packed(uint32_t field, const std::vector<uint64_t>& values) {
    if (values.empty()) return;
    ProtoEncoder packed;
    for (uint64_t v : values) packed.varint(v);
    add_bytes(field, packed.out_);
  }

  const std::string& bytes() const { return out_; }
  void clear() { out_.clear(); }

 private:
  void tag(uint32_t field, uint32_t wire_type) { varint(uint64_t{field} << 3 | wire_type); }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }

  std::string out_;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_PPROF_PROTO_ENCODER_H_
