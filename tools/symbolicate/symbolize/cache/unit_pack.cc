#include "symbolize/cache/unit_pack.h"

#include <cstring>

#include "symbolize/byte_io.h"
#include "symbolize/cache/module_index.h"

namespace inprof::symbolicate {
namespace {

constexpr char kPackMagic[8] = {'I', 'N', 'P', 'R', 'P', 'A', 'C', 'K'};

}  // namespace

std::string encode_unit_pack(std::string_view key,
                             const std::vector<std::pair<uint64_t, std::string>>& units) {
  ByteWriter head;
  head.out().append(kPackMagic, sizeof kPackMagic);
  head.u32(kModuleIndexVersion);
  head.bytes(key);
  head.u32(static_cast<uint32_t>(units.size()));
  // The directory's own size is known before its offsets: each entry is 24 bytes, then 8 of
  // checksum.
  uint64_t at = head.out().size() + units.size() * 24 + 8;
  for (const auto& [unit, bytes] : units) {
    head.u64(unit);
    head.u64(at);
    head.u64(bytes.size());
    at += bytes.size();
  }
  head.u64(fast_checksum(head.out().data(), head.out().size()));
  std::string out = std::move(head.out());
  out.reserve(at);
  for (const auto& unit : units) out.append(unit.second);
  return out;
}

bool is_unit_pack(std::string_view bytes) {
  return bytes.size() >= sizeof kPackMagic &&
         std::memcmp(bytes.data(), kPackMagic, sizeof kPackMagic) == 0;
}

std::optional<std::string_view> find_in_unit_pack(std::string_view key, uint64_t unit,
                                                  std::string_view bytes) {
  if (!is_unit_pack(bytes)) return std::nullopt;
  ByteReader in(bytes.substr(sizeof kPackMagic));
  uint32_t version, count;
  std::string_view stored_key;
  if (!in.u32(&version) || version != kModuleIndexVersion || !in.bytes(&stored_key) ||
      stored_key != key || !in.u32(&count) || count > in.left() / 24) {
    return std::nullopt;
  }
  std::optional<std::string_view> found;
  for (uint32_t i = 0; i < count; ++i) {
    uint64_t offset, start, length;
    if (!in.u64(&offset) || !in.u64(&start) || !in.u64(&length)) return std::nullopt;
    if (offset == unit && start <= bytes.size() && length <= bytes.size() - start) {
      found = bytes.substr(start, length);
    }
  }
  const size_t directory_end = sizeof kPackMagic + in.position();
  uint64_t checksum;
  if (!in.u64(&checksum) || fast_checksum(bytes.data(), directory_end) != checksum) {
    return std::nullopt;
  }
  return found;
}

}  // namespace inprof::symbolicate
