// Encoding samples into the dump (lib/dump): the sampler's encode_sample, and the writer
// thread's work per sample (framing into a chunk, zstd at flush, the file write), on a steady
// synthetic stream like a busy program's: two threads, a 30-frame stack whose leaf moves among
// 40 addresses, one sample per 100 µs per thread.
//
//   BM_EncodeSample: one sample record into a fixed buffer (sampler side).
//   BM_DumpWritePerSample: append + compress + write, per sample (writer side);
//     bytes_per_sample = dump bytes on disk / samples.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "dump/dump_records.h"
#include "dump/dump_writer.h"

namespace inprof::internal {
namespace {

struct SyntheticSample {
  uint64_t tid;
  uint64_t time_ns;
  uint64_t cpu_delta_ns;
  std::vector<uint64_t> frames;
};

// Deterministic pseudo-random stream (xorshift), so every run encodes the same bytes.
std::vector<SyntheticSample> steady_stream(size_t count) {
  std::vector<uint64_t> stack(30);
  for (size_t i = 0; i < stack.size(); ++i) stack[i] = 0x5580'0000'1000ull + 0x40 * i + 0x1b;
  stack.back() = 0x7f12'3456'7000ull;  // thread start, in libc
  uint64_t x = 88172645463325252ull;
  std::vector<SyntheticSample> out;
  uint64_t time[2] = {0, 0};
  for (size_t i = 0; i < count; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const uint64_t thread = i & 1;
    time[thread] += 100000 + (x % 5000);
    SyntheticSample s{1000 + thread, time[thread], 95000 + (x >> 8) % 10000, stack};
    s.frames[0] = 0x5580'0000'0800ull + ((x >> 20) % 40) * 3;  // the leaf's PC moves
    out.push_back(std::move(s));
  }
  return out;
}

void BM_EncodeSample(benchmark::State& state) {
  const auto stream = steady_stream(1024);
  std::vector<uint8_t> buffer(8192);
  size_t i = 0, bytes = 0;
  for (auto _ : state) {
    const SyntheticSample& s = stream[i++ & 1023];
    ByteWriter w(std::span<uint8_t>(buffer.data(), buffer.size()));
    encode_sample(w, s.tid, s.time_ns, s.cpu_delta_ns, 0, s.frames, {});
    bytes = w.size();
    benchmark::DoNotOptimize(buffer.data());
  }
  state.counters["record_bytes"] = double(bytes);
}
BENCHMARK(BM_EncodeSample);

void BM_DumpWritePerSample(benchmark::State& state) {
  constexpr size_t kFlushBytes = 1u << 20;  // as the session's writer does
  const auto stream = steady_stream(1 << 16);
  const auto path = std::filesystem::temp_directory_path() /
                    ("inprof-encoding-bench-" + std::to_string(getpid()) + ".inprof");
  Status status;
  auto writer = DumpWriter::create(OutputFile::create(path.string(), &status), &status);
  if (!writer) return state.SkipWithError(status.message().c_str());
  std::vector<uint8_t> buffer(8192);
  size_t i = 0;
  for (auto _ : state) {
    const SyntheticSample& s = stream[i++ & 0xffff];
    ByteWriter w(std::span<uint8_t>(buffer.data(), buffer.size()));
    encode_sample(w, s.tid, s.time_ns, s.cpu_delta_ns, 0, s.frames, {});
    writer->add_payload(RecordType::kSample, w.view());
    if (writer->pending_bytes() >= kFlushBytes) (void)writer->flush();
  }
  (void)writer->close();
  const auto size = std::filesystem::file_size(path);
  std::filesystem::remove(path);
  state.counters["bytes_per_sample"] = double(size) / double(state.iterations());
}
BENCHMARK(BM_DumpWritePerSample)->Iterations(400000);

}  // namespace
}  // namespace inprof::internal

BENCHMARK_MAIN();
