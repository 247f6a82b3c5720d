// unit_pack.h: several units' bytes in one file, each found by its DIE offset; a damaged
// directory or another module's pack finds nothing, a unit cut short is not found.
#include "symbolize/cache/unit_pack.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace {

using inprof::symbolicate::encode_unit_pack;
using inprof::symbolicate::find_in_unit_pack;
using inprof::symbolicate::is_unit_pack;

std::vector<std::pair<uint64_t, std::string>> sample_units() {
  return {{0x10, std::string(100, 'a')}, {0x2b, "bb"}, {0x300, std::string(5000, 'c')}};
}

TEST(UnitPack, EachUnitIsFoundByItsOffset) {
  const auto units = sample_units();
  const std::string pack = encode_unit_pack("key", units);
  EXPECT_TRUE(is_unit_pack(pack));
  EXPECT_FALSE(is_unit_pack(units[0].second));
  for (const auto& [unit, bytes] : units) {
    auto found = find_in_unit_pack("key", unit, pack);
    ASSERT_TRUE(found) << unit;
    EXPECT_EQ(*found, bytes) << unit;
  }
  EXPECT_FALSE(find_in_unit_pack("key", 0x11, pack));
  EXPECT_FALSE(find_in_unit_pack("other key", 0x10, pack));
}

TEST(UnitPack, ADamagedDirectoryFindsNothingAndACutUnitIsMissing) {
  const auto units = sample_units();
  const std::string pack = encode_unit_pack("key", units);
  const size_t directory = pack.size() - 5102;  // the units' bytes follow it
  for (size_t i = 0; i < directory; ++i) {
    std::string damaged = pack;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x04);
    for (const auto& unit : units) {
      EXPECT_FALSE(find_in_unit_pack("key", unit.first, damaged)) << "byte " << i;
    }
  }
  for (size_t n = 0; n < directory; ++n) {
    EXPECT_FALSE(find_in_unit_pack("key", 0x10, pack.substr(0, n))) << n;
  }
  // Cut within the last unit: the first two are whole, the last is not handed out.
  const std::string cut = pack.substr(0, pack.size() - 10);
  EXPECT_TRUE(find_in_unit_pack("key", 0x10, cut));
  EXPECT_TRUE(find_in_unit_pack("key", 0x2b, cut));
  EXPECT_FALSE(find_in_unit_pack("key", 0x300, cut));
}

}  // namespace
