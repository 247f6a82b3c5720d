#include "session/ring_buffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
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

// The writer thread reads reserved_end(), then takes the metadata queue, then drains only up
// to that point: records reserved afterwards wait for the next drain.
TEST(RingBuffer, DrainStopsWhereTheReservationsEndedWhenAsked) {
  RingBuffer ring(4096);
  const std::vector<uint8_t> p(12, 7);
  ASSERT_TRUE(ring.write(1, p));
  ASSERT_TRUE(ring.write(2, p));
  const uint64_t until = ring.reserved_end();
  ASSERT_TRUE(ring.write(3, p));
  std::vector<uint8_t> types;
  auto collect = [&](uint8_t type, std::span<const uint8_t>) { types.push_back(type); };
  EXPECT_EQ(ring.drain(collect, until), 2u);
  EXPECT_EQ(types, (std::vector<uint8_t>{1, 2}));
  EXPECT_EQ(ring.drain(collect), 1u);
  EXPECT_EQ(types, (std::vector<uint8_t>{1, 2, 3}));
}

TEST(RingBufferOverwrite, ReadRetainedStopsWhereTheReservationsEndedWhenAsked) {
  RingBuffer ring(4096, RingBuffer::WhenFull::kOverwrite);
  const std::vector<uint8_t> p(12, 7);
  ASSERT_TRUE(ring.write(1, p));
  const uint64_t until = ring.reserved_end();
  ASSERT_TRUE(ring.write(2, p));
  std::vector<uint8_t> scratch((ring.max_payload() + 7) & ~size_t(7));
  std::vector<uint8_t> types;
  auto collect = [&](uint8_t type, std::span<const uint8_t>) { types.push_back(type); };
  EXPECT_EQ(ring.read_retained(scratch, collect, until), 1u);
  EXPECT_EQ(ring.read_retained(scratch, collect), 2u);
  EXPECT_EQ(types, (std::vector<uint8_t>{1, 1, 2}));
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

// --- kOverwrite: the flight recorder ---------------------------------------------------------

std::vector<uint8_t> retained_scratch(const RingBuffer& ring) {
  return std::vector<uint8_t>((ring.max_payload() + 7) & ~size_t(7));
}

TEST(RingBufferOverwrite, KeepsTheNewestRecordsInOrder) {
  RingBuffer ring(4096, RingBuffer::WhenFull::kOverwrite);
  constexpr uint32_t kRecords = 1000;
  for (uint32_t seq = 0; seq < kRecords; ++seq) {
    ASSERT_TRUE(ring.write(5, payload_of(0, seq, 8 + seq % 50)));
  }
  EXPECT_EQ(ring.dropped(), 0u);
  auto scratch = retained_scratch(ring);
  std::vector<uint32_t> seen;
  size_t bytes = 0;
  ring.read_retained(scratch, [&](uint8_t type, std::span<const uint8_t> payload) {
    uint32_t writer, seq;
    std::memcpy(&writer, payload.data(), 4);
    std::memcpy(&seq, payload.data() + 4, 4);
    EXPECT_EQ(type, 5);
    auto expect = payload_of(writer, seq, payload.size());
    EXPECT_TRUE(std::equal(payload.begin(), payload.end(), expect.begin(), expect.end()));
    seen.push_back(seq);
    bytes += 8 + ((payload.size() + 7) & ~size_t(7));
  });
  ASSERT_FALSE(seen.empty());
  // The newest record is there, the ones before it follow without a gap, and together they fill
  // most of the ring (what is left is less than one more record).
  EXPECT_EQ(seen.back(), kRecords - 1);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_EQ(seen[i], seen[i - 1] + 1);
  EXPECT_GT(bytes, 4096u - 72u);
  EXPECT_LE(bytes, 4096u);
  EXPECT_EQ(ring.overwritten(), kRecords - seen.size());
  // Reading does not consume.
  size_t again = ring.read_retained(scratch, [](uint8_t, std::span<const uint8_t>) {});
  EXPECT_EQ(again, seen.size());
}

TEST(RingBufferOverwrite, ReaderNeedsRoomForTheLargestRecord) {
  RingBuffer ring(4096, RingBuffer::WhenFull::kOverwrite);
  ASSERT_TRUE(ring.write(1, std::vector<uint8_t>(10, 1)));
  std::vector<uint8_t> small(8);
  EXPECT_EQ(ring.read_retained(small, [](uint8_t, std::span<const uint8_t>) {}), 0u);
}

TEST(RingBufferOverwrite, ClosedRingIsAllPublished) {
  RingBuffer ring(4096, RingBuffer::WhenFull::kOverwrite);
  for (uint32_t seq = 0; seq < 100; ++seq) ASSERT_TRUE(ring.write(1, payload_of(0, seq, 40)));
  ring.close();
  EXPECT_FALSE(ring.write(1, payload_of(0, 0, 40)));
  EXPECT_TRUE(ring.all_published());
}

// Writers overwrite while readers copy: every record a reader delivers is intact (no torn or
// half-overwritten payload), per-writer sequence numbers only grow within one read, and the
// last read after the writers stop ends with a writer's final record. The writers go on past
// their count until the reader has finished two reads: under Wine on a loaded machine the reader
// thread got its first CPU after the writers had ended, and nothing was read while they wrote.
TEST(RingBufferOverwrite, ReadersNeverSeeTornRecordsWhileWritersOverwrite) {
  RingBuffer ring(16 << 10, RingBuffer::WhenFull::kOverwrite);
  constexpr uint32_t kWriters = 3;
  constexpr uint32_t kPerWriter = 60000;
  constexpr uint64_t kReadsWhileWriting = 2;
  std::atomic<uint32_t> writers_done{0};
  std::atomic<uint64_t> reads_while_writing{0};
  std::vector<uint32_t> final_seq(kWriters);
  std::vector<std::thread> writers;
  for (uint32_t w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      uint32_t seq = 0;
      for (; seq < kPerWriter || reads_while_writing.load() < kReadsWhileWriting; ++seq) {
        // Failures are possible only when the oldest record is still being written.
        (void)ring.write(static_cast<uint8_t>(w), payload_of(w, seq, 8 + (seq * 13 + w) % 300));
      }
      final_seq[w] = seq - 1;
      writers_done.fetch_add(1);
    });
  }
  uint64_t torn = 0, delivered = 0;
  auto check_read = [&](std::vector<int64_t>& last_seq) {
    std::vector<uint8_t> scratch = retained_scratch(ring);
    std::fill(last_seq.begin(), last_seq.end(), -1);
    delivered += ring.read_retained(scratch, [&](uint8_t type, std::span<const uint8_t> payload) {
      uint32_t writer, seq;
      std::memcpy(&writer, payload.data(), 4);
      std::memcpy(&seq, payload.data() + 4, 4);
      if (writer >= kWriters || writer != type) {
        ++torn;
        return;
      }
      auto expect = payload_of(writer, seq, payload.size());
      if (!std::equal(payload.begin(), payload.end(), expect.begin(), expect.end()) ||
          static_cast<int64_t>(seq) <= last_seq[writer]) {
        ++torn;
        return;
      }
      last_seq[writer] = seq;
    });
  };
  std::vector<int64_t> last_seq(kWriters);
  std::thread reader([&] {
    std::vector<int64_t> seqs(kWriters);
    while (writers_done.load() < kWriters) {
      check_read(seqs);
      reads_while_writing.fetch_add(1);
    }
  });
  for (auto& t : writers) t.join();
  reader.join();
  check_read(last_seq);
  EXPECT_EQ(torn, 0u);
  EXPECT_GE(reads_while_writing.load(), kReadsWhileWriting);
  EXPECT_GT(delivered, 0u);
  // The write that ended last was a writer's final one, and nothing came after it.
  bool a_final_record_is_there = false;
  for (uint32_t w = 0; w < kWriters; ++w) {
    a_final_record_is_there |= last_seq[w] == int64_t(final_seq[w]);
  }
  EXPECT_TRUE(a_final_record_is_there);
}

// A capture reads slowly (it compresses and writes as it goes) while the sampler and marker
// writers keep writing. A guarded reader is never overtaken: writers that would evict a record it
// has not reached drop their own (counted), so what it delivers is one unbroken run of records.
// Unguarded, the evictions overtook it and it resumed further on: a hole no counter stated.
TEST(RingBufferOverwrite, AGuardedReaderDeliversAnUnbrokenRangeAndTheWritersDropInstead) {
  RingBuffer ring(4096, RingBuffer::WhenFull::kOverwrite);
  uint32_t seq = 0;
  for (; seq < 400; ++seq) ASSERT_TRUE(ring.write(1, payload_of(0, seq, 24)));  // full
  std::atomic<bool> reading{false}, read_done{false};
  std::thread writer([&] {
    while (!reading.load()) std::this_thread::yield();
    uint32_t next = 1000000;
    while (!read_done.load()) (void)ring.write(1, payload_of(0, next++, 24));
  });
  auto scratch = retained_scratch(ring);
  std::vector<uint32_t> seen;
  const uint64_t dropped_before = ring.dropped();
  ring.read_retained(
      scratch,
      [&](uint8_t, std::span<const uint8_t> payload) {
        uint32_t record_seq;
        std::memcpy(&record_seq, payload.data() + 4, 4);
        seen.push_back(record_seq);
        if (seen.size() == 1) {
          reading.store(true);
          // The writer's next record needs the space of the one being read: it must drop its own.
          // Waited for, however slowly the writer gets a CPU (10 s: only against a hang).
          for (int i = 0; i < 10000 && ring.dropped() == dropped_before; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
        }
        // Slow, as a capture is: the writer gets many turns per record.
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      },
      ring.reserved_end(), /*guard=*/true);
  read_done.store(true);
  writer.join();
  ASSERT_GT(seen.size(), 50u);
  for (size_t i = 1; i < seen.size(); ++i) ASSERT_EQ(seen[i], seen[i - 1] + 1) << "at " << i;
  EXPECT_EQ(seen.back(), seq - 1);
  EXPECT_GT(ring.dropped(), dropped_before);  // the writer was refused, and it was counted
  // The guard ends with the read: writers evict again.
  EXPECT_TRUE(ring.write(1, payload_of(0, 7, 24)));
}

}  // namespace
}  // namespace inprof::internal
