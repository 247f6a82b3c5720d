// The ring as a lifeboat uses it (session/lifeboat.h): records drained but held until released,
// and the storage read back, as a dead process left it, from the last released position.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "session/ring_buffer.h"

namespace inprof::internal {
namespace {

struct Seen {
  uint8_t type;
  std::vector<uint8_t> payload;
};

std::vector<Seen> read_back(const std::vector<uint64_t>& storage, uint64_t from,
                            uint64_t* end = nullptr) {
  std::vector<Seen> seen;
  RingBuffer::read_image(
      storage, from,
      [&](uint8_t type, std::span<const uint8_t> p) {
        seen.push_back({type, {p.begin(), p.end()}});
      },
      end);
  return seen;
}

TEST(RingHeld, DrainedRecordsKeepTheirSpaceUntilReleased) {
  std::vector<uint64_t> storage(4096 / 8, 0);
  RingBuffer ring(std::span<uint64_t>(storage), RingBuffer::WhenFull::kDrop);
  const std::vector<uint8_t> p(100, 7);
  size_t written = 0;
  while (ring.write(1, p)) ++written;
  ASSERT_GT(written, 10u);
  EXPECT_EQ(ring.drain_held([](uint8_t, std::span<const uint8_t>) {}), written);
  EXPECT_FALSE(ring.write(1, p)) << "the space of held records was given to a new one";
  EXPECT_TRUE(ring.all_published());
  ring.release_drained();
  EXPECT_TRUE(ring.write(1, p));
  EXPECT_EQ(ring.drain_held([](uint8_t, std::span<const uint8_t>) {}), 1u);
}

TEST(RingHeld, AReleaseInsideTheCallbackCoversTheRecordGiven) {
  std::vector<uint64_t> storage(4096 / 8, 0);
  RingBuffer ring(std::span<uint64_t>(storage), RingBuffer::WhenFull::kDrop);
  for (uint8_t i = 0; i < 5; ++i) ASSERT_TRUE(ring.write(i, std::vector<uint8_t>(16, i)));
  std::vector<uint8_t> types;
  ring.drain_held([&](uint8_t type, std::span<const uint8_t> payload) {
    types.push_back(type);
    EXPECT_EQ(payload[0], type);
    if (type == 2) ring.release_drained();
  });
  EXPECT_EQ(types, (std::vector<uint8_t>{0, 1, 2, 3, 4}));
  // Records 0-2 were released: read from where they end, the storage holds 3 and 4.
  const uint64_t after_two = 3 * (8 + 16);
  const std::vector<Seen> seen = read_back(storage, after_two);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].type, 3);
  EXPECT_EQ(seen[1].type, 4);
  EXPECT_TRUE(read_back(storage, 0).empty()) << "released space still reads as records";
}

TEST(RingHeld, TheImageHoldsWhatCameAfterTheLastReleaseAcrossTheWrap) {
  std::vector<uint64_t> storage(4096 / 8, 0);
  RingBuffer ring(std::span<uint64_t>(storage), RingBuffer::WhenFull::kDrop);
  // Around the ring more than once, releasing as a writer landing its chunks would.
  uint32_t next = 0;
  for (int round = 0; round < 7; ++round) {
    for (int i = 0; i < 9; ++i, ++next) {
      std::vector<uint8_t> p(200 + next % 13);
      std::memcpy(p.data(), &next, 4);
      ASSERT_TRUE(ring.write(uint8_t(next % 200), p));
    }
    ring.drain_held([](uint8_t, std::span<const uint8_t>) {});
    if (round < 6) ring.release_drained();
  }
  // The last round was drained, not released: a dead process's ring holds it from there.
  const uint64_t landed = ring.drained_to();
  uint64_t from = 0;
  {
    // Where the last release left the tail: the drained end minus the last round's records.
    uint64_t bytes = 0;
    for (uint32_t k = next - 9; k < next; ++k) bytes += 8 + ((200 + k % 13 + 7) & ~7u);
    from = landed - bytes;
  }
  uint64_t end = 0;
  const std::vector<Seen> seen = read_back(storage, from, &end);
  ASSERT_EQ(seen.size(), 9u);
  for (uint32_t k = 0; k < 9; ++k) {
    uint32_t id = 0;
    std::memcpy(&id, seen[k].payload.data(), 4);
    EXPECT_EQ(id, next - 9 + k);
    EXPECT_EQ(seen[k].payload.size(), 200 + id % 13);
  }
  EXPECT_EQ(end, landed);
}

TEST(RingHeld, AnImageOfGarbageEndsTheReadWithoutHarm) {
  std::vector<uint64_t> storage(4096 / 8);
  uint64_t x = 0x9e3779b97f4a7c15;
  for (uint64_t& w : storage) w = (x = x * 6364136223846793005u + 1442695040888963407u);
  // A header that claims a record larger than the ring, tagged for position 0.
  storage[0] = (uint64_t(1) << 63) | 0xfffff0;
  EXPECT_TRUE(read_back(storage, 0).empty());
  for (uint64_t from = 0; from < 8192; from += 8) read_back(storage, from);  // no crash, bounded
  EXPECT_TRUE(read_back(std::vector<uint64_t>(100), 0).empty()) << "not a power of two";
}

}  // namespace
}  // namespace inprof::internal
