#include "ring_buffer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

namespace inprof::internal {
namespace {

std::vector<uint8_t> payload_of(uint32_t writer, uint32_t seq, size_t size) {
  std::vector<uint8_t> p(size);
  // Self-checking payload: header fields, then bytes derived from them.
  std::memcpy(p.data(), &writer, 4);
  std::memcpy(p.data() + 4, &seq, 4);
  for (size_t i = 8; i < size; ++i) p[i] = static_cast<uint8_t>(writer * 31 + seq * 7 + i);
  return p;
}

TEST(RingBuffer, DeliversRecordsInOrder) {
  RingBuffer ring(4096);
  for (uint8_t i = 0; i < 10; ++i) {
    std::vector<uint8_t> p(i + 1, i);
    ASSERT_TRUE(ring.write(i, p));
  }
  uint8_t expected = 0;
  size_t n = ring.drain([&](uint8_t type, std::span<const uint8_t> payload) {
    EXPECT_EQ(type, expected);
    EXPECT_EQ(payload.size(), expected + 1u);
    for (uint8_t b : payload) EXPECT_EQ(b, expected);
    ++expected;
  });
  EXPECT_EQ(n, 10u);
  EXPECT_EQ(ring.drain([](uint8_t, std::span<const uint8_t>) { FAIL(); }), 0u);
}

TEST(RingBuffer, DropsAndCountsWhenFull) {
  RingBuffer ring(4096);
  std::vector<uint8_t> p(100, 1);
  size_t accepted = 0;
  for (int i = 0; i < 100; ++i) accepted += ring.write(1, p);
  // 100-byte payload + 8-byte header, rounded to 8: 112 bytes each.
  EXPECT_EQ(accepted, 4096u / 112u);
  EXPECT_EQ(ring.dropped(), 100u - accepted);
  EXPECT_EQ(ring.drain([](uint8_t, std::span<const uint8_t>) {}), accepted);
  EXPECT_TRUE(ring.write(1, p));  // space is reusable after the drain
}

TEST(RingBuffer, RejectsOversizedRecord) {
  RingBuffer ring(4096);
  std::vector<uint8_t> p(ring.max_payload() + 1);
  EXPECT_FALSE(ring.write(1, p));
  EXPECT_EQ(ring.dropped(), 1u);
}

TEST(RingBuffer, PayloadsWrapAroundTheEnd) {
  RingBuffer ring(4096);
  // Odd sizes move the write position around the ring many times.
  for (uint32_t seq = 0; seq < 2000; ++seq) {
    auto p = payload_of(0, seq, 8 + (seq * 37) % 900);
    ASSERT_TRUE(ring.write(3, p));
    bool got = false;
    ring.drain([&](uint8_t type, std::span<const uint8_t> payload) {
      EXPECT_EQ(type, 3);
      EXPECT_TRUE(std::equal(payload.begin(), payload.end(), p.begin(), p.end()));
      got = true;
    });
    ASSERT_TRUE(got);
  }
}

// Several writers race with a draining consumer: every record that was accepted arrives intact
// and in per-writer order; every rejected one is counted.
TEST(RingBuffer, ConcurrentWritersNeverCorrupt) {
  RingBuffer ring(64 << 10);
  constexpr uint32_t kWriters = 4;
  constexpr uint32_t kPerWriter = 50000;
  std::atomic<bool> done{false};
  std::vector<uint64_t> accepted(kWriters, 0);
  std::vector<std::thread> writers;
  for (uint32_t w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (uint32_t seq = 0; seq < kPerWriter; ++seq) {
        auto p = payload_of(w, seq, 8 + (seq * 13 + w) % 200);
        if (ring.write(static_cast<uint8_t>(w), p)) ++accepted[w];
      }
    });
  }
  std::vector<int64_t> last_seq(kWriters, -1);
  std::vector<uint64_t> received(kWriters, 0);
  uint64_t corrupt = 0;
  auto consume = [&](uint8_t type, std::span<const uint8_t> payload) {
    uint32_t writer, seq;
    std::memcpy(&writer, payload.data(), 4);
    std::memcpy(&seq, payload.data() + 4, 4);
    auto expect = payload_of(writer, seq, payload.size());
    if (writer != type || writer >= kWriters ||
        !std::equal(payload.begin(), payload.end(), expect.begin()) ||
        static_cast<int64_t>(seq) <= last_seq[writer]) {
      ++corrupt;
      return;
    }
    last_seq[writer] = seq;
    ++received[writer];
  };
  std::thread consumer([&] {
    while (!done.load()) ring.drain(consume);
    ring.drain(consume);
  });
  for (auto& t : writers) t.join();
  done.store(true);
  consumer.join();
  EXPECT_EQ(corrupt, 0u);
  uint64_t total_accepted = 0;
  for (uint32_t w = 0; w < kWriters; ++w) {
    EXPECT_EQ(received[w], accepted[w]) << "writer " << w;
    total_accepted += accepted[w];
  }
  EXPECT_EQ(total_accepted + ring.dropped(), uint64_t(kWriters) * kPerWriter);
}

TEST(RingBuffer, ClosedRingRefusesWritesButDeliversWhatItHad) {
  RingBuffer ring(4096);
  std::vector<uint8_t> p(16, 7);
  ASSERT_TRUE(ring.write(1, p));
  ring.close();
  EXPECT_FALSE(ring.write(1, p));
  EXPECT_EQ(ring.dropped(), 1u);
  EXPECT_FALSE(ring.all_published());  // one record not yet consumed
  EXPECT_EQ(ring.drain([](uint8_t, std::span<const uint8_t>) {}), 1u);
  EXPECT_TRUE(ring.all_published());
}

}  // namespace
}  // namespace inprof::internal
