// One record into the ring buffer (lib/session/ring_buffer.h), by payload size: the sampler's write
// of an encoded sample, and a marker's. The ring is warmed first (its pages touched) and drained
// outside the timed region, so what is measured is the reservation CAS, the copy and the
// publishing store.
//
//   BM_RingWrite/N: one producer.
//   BM_RingWriteContended/N: two producers (the sampler and a marker-writing thread).
#include <benchmark/benchmark.h>

#include <vector>

#include "session/ring_buffer.h"

namespace inprof::internal {
namespace {

constexpr size_t kRingBytes = 64u << 20;
constexpr size_t kDrainEvery = 100000;

RingBuffer& shared_ring() {
  static RingBuffer* ring = [] {
    auto* r = new RingBuffer(kRingBytes);
    std::vector<uint8_t> fill(4096, 7);
    while (r->write(1, fill)) {
    }
    r->drain([](uint8_t, std::span<const uint8_t>) {});
    return r;
  }();
  return *ring;
}

void BM_RingWrite(benchmark::State& state) {
  RingBuffer& ring = shared_ring();
  std::vector<uint8_t> payload(static_cast<size_t>(state.range(0)), 0x5a);
  size_t since_drain = 0;
  uint64_t refused = 0;
  for (auto _ : state) {
    if (!ring.write(7, payload)) ++refused;
    if (++since_drain == kDrainEvery) {
      state.PauseTiming();
      ring.drain([](uint8_t, std::span<const uint8_t>) {});
      since_drain = 0;
      state.ResumeTiming();
    }
  }
  ring.drain([](uint8_t, std::span<const uint8_t>) {});
  state.counters["refused"] = double(refused);
  state.SetBytesProcessed(int64_t(state.iterations()) * state.range(0));
}
BENCHMARK(BM_RingWrite)->Arg(24)->Arg(96)->Arg(400);

void BM_RingWriteContended(benchmark::State& state) {
  RingBuffer& ring = shared_ring();
  std::vector<uint8_t> payload(static_cast<size_t>(state.range(0)), 0x5a);
  size_t since_drain = 0;
  for (auto _ : state) {
    ring.write(7, payload);
    if (++since_drain == kDrainEvery / 2) {
      state.PauseTiming();
      if (state.thread_index() == 0) ring.drain([](uint8_t, std::span<const uint8_t>) {});
      since_drain = 0;
      state.ResumeTiming();
    }
  }
  if (state.thread_index() == 0) ring.drain([](uint8_t, std::span<const uint8_t>) {});
}
BENCHMARK(BM_RingWriteContended)->Arg(96)->Threads(2);

}  // namespace
}  // namespace inprof::internal

BENCHMARK_MAIN();
