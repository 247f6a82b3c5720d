// Encoding samples into the dump (lib/dump): the sampler's encode_sample, and the writer
// thread's work per sample (deduplicating its stack, framing it into a chunk, zstd at flush, the
// file write), on a steady synthetic stream like a busy program's: two threads, a 30-frame
// stack whose leaf moves among 40 addresses, one sample per 100 µs per thread. Chunks end every
// 500 ms of samples or 1 MiB, as the session's writer does.
//
//   BM_EncodeSample: one sample record into a fixed buffer (sampler side).
//   BM_DumpWritePerSample/<format version>/<zstd level>: the writer's CPU per sample;
//     bytes_per_sample = dump bytes on disk / samples.
//
// `dump_encoding_benchmark --rewrite IN OUT [VERSION [LEVEL]]` does the same for a real dump
// (e.g. one recorded from benchmarks/compare's workload): it writes all of IN's records again as
// the session's writer would and prints bytes and writer CPU per sample.
#include <benchmark/benchmark.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "dump/dump_reader.h"
#include "dump/dump_records.h"
#include "dump/dump_writer.h"

namespace inprof::internal {
namespace {

constexpr size_t kFlushBytes = 1u << 20;          // as the session's writer does
constexpr uint64_t kFlushPeriodNs = 500'000'000;  // likewise

// A sample or repeat as the ring buffer hands it to the writer.
struct RingRecord {
  RecordType type;
  uint64_t time_ns;
  std::vector<uint8_t> payload;
};

RingRecord encoded(uint64_t tid, uint64_t time_ns, std::optional<uint64_t> cpu_delta_ns,
                   uint32_t flags, std::span<const uint64_t> frames,
                   std::span<const LeafCandidate> candidates = {},
                   std::span<const SampleLabel> labels = {}) {
  RingRecord r{RecordType::kSample, time_ns, {}};
  ByteWriter w(&r.payload);
  encode_sample(w, tid, time_ns, cpu_delta_ns, flags, frames, candidates, labels);
  return r;
}

// Deterministic pseudo-random stream (xorshift), so every run encodes the same bytes.
std::vector<RingRecord> steady_stream(size_t count) {
  std::vector<uint64_t> stack(30);
  for (size_t i = 0; i < stack.size(); ++i) stack[i] = 0x5580'0000'1000ull + 0x40 * i + 0x1b;
  stack.back() = 0x7f12'3456'7000ull;  // thread start, in libc
  uint64_t x = 88172645463325252ull;
  std::vector<RingRecord> out;
  uint64_t time[2] = {0, 0};
  for (size_t i = 0; i < count; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const uint64_t thread = i & 1;
    time[thread] += 100000 + (x % 5000);
    stack[0] = 0x5580'0000'0800ull + ((x >> 20) % 40) * 3;  // the leaf's PC moves
    out.push_back(encoded(1000 + thread, time[thread], 95000 + (x >> 8) % 10000, 0, stack));
  }
  return out;
}

// Every record of a dump, re-encoded as the session hands it to the writer (samples as the
// sampler encoded them), with the time the session's chunking goes by.
class AllRecords final : public DumpVisitor {
 public:
  void on_process(const ProcessRecord& r) override { add(RecordType::kProcess, r); }
  void on_module_load(const ModuleRecord& r) override { add(RecordType::kModuleLoad, r); }
  void on_module_unload(const ModuleUnloadRecord& r) override { add(RecordType::kModuleUnload, r); }
  void on_thread_start(const ThreadRecord& r) override { add(RecordType::kThreadStart, r); }
  void on_thread_name(const ThreadRecord& r) override { add(RecordType::kThreadName, r); }
  void on_thread_end(const ThreadEndRecord& r) override { add(RecordType::kThreadEnd, r); }
  void on_sample(const SampleRecord& s) override {
    ++samples;
    records.push_back(
        encoded(s.tid, s.time_ns, s.cpu_delta_ns, s.flags, s.frames, s.leaf_candidates, s.labels));
  }
  void on_sample_repeat(const SampleRepeatRecord& r) override {
    ++samples;
    add(RecordType::kSampleRepeat, r, r.time_ns);
  }
  void on_stats(const StatsRecord& r) override { add(RecordType::kStats, r); }
  void on_end(const EndRecord& r) override { add(RecordType::kEnd, r); }
  void on_category(const CategoryRecord& r) override { add(RecordType::kCategory, r); }
  void on_marker_schema(const MarkerSchemaRecord& r) override { add(RecordType::kMarkerSchema, r); }
  void on_marker(const MarkerRecord& r) override {
    std::vector<MarkerValueView> values;
    for (const auto& v : r.values) values.push_back({v.kind, v.integer, v.decimal, v.string});
    RingRecord out{RecordType::kMarker, r.end_ns, {}};
    {
      ByteWriter w(&out.payload);
      encode_marker(w, r.tid, r.category, r.phase, r.start_ns, r.end_ns, r.name, r.type, values);
    }
    records.push_back(std::move(out));
  }
  void on_string(const StringRecord& r) override { add(RecordType::kString, r); }
  void on_counter(const CounterRecord& r) override { add(RecordType::kCounter, r); }
  void on_counter_sample(const CounterSampleRecord& r) override {
    add(RecordType::kCounterSample, r, r.time_ns);
  }
  void on_pause(const PauseRecord& r) override { add(RecordType::kPause, r); }
  void on_resume(const PauseRecord& r) override { add(RecordType::kResume, r); }
  void on_jit_map(const JitMapRecord& r) override { add(RecordType::kJitMap, r); }
  void on_capture(const CaptureRecord& r) override { add(RecordType::kCapture, r); }

  std::vector<RingRecord> records;
  uint64_t samples = 0;  // samples and repeats

 private:
  template <typename Record>
  void add(RecordType type, const Record& r, uint64_t time_ns = 0) {
    RingRecord out{type, time_ns, {}};
    {
      ByteWriter w(&out.payload);
      encode(w, r);
    }
    records.push_back(std::move(out));
  }
};

// Writes `records` once, chunked as the session does; returns the writer's CPU time in ns.
uint64_t rewrite(const std::vector<RingRecord>& records, const std::string& out, uint32_t version,
                 int level) {
  Status status;
  auto writer = DumpWriter::create(OutputFile::create(out, &status), &status, level, version);
  if (!writer) {
    std::fprintf(stderr, "dump_encoding_benchmark: %s\n", status.message().c_str());
    std::exit(1);
  }
  timespec begin{}, end{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &begin);
  uint64_t chunk_start_ns = 0;
  for (const RingRecord& r : records) {
    writer->add_payload(r.type, r.payload);
    if (writer->pending_bytes() >= kFlushBytes || r.time_ns >= chunk_start_ns + kFlushPeriodNs) {
      (void)writer->flush();
      chunk_start_ns = r.time_ns;
    }
  }
  (void)writer->close();
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end);
  return uint64_t(end.tv_sec - begin.tv_sec) * 1'000'000'000 + end.tv_nsec - begin.tv_nsec;
}

// Writes `records` (cycling through them) as the session's writer would, one per iteration.
void write_records(benchmark::State& state, const std::vector<RingRecord>& records) {
  const auto version = static_cast<uint32_t>(state.range(0));
  const int level = static_cast<int>(state.range(1));
  const auto path = std::filesystem::temp_directory_path() /
                    ("inprof-encoding-bench-" + std::to_string(getpid()) + ".inprof");
  Status status;
  auto writer =
      DumpWriter::create(OutputFile::create(path.string(), &status), &status, level, version);
  if (!writer) return state.SkipWithError(status.message().c_str());
  size_t i = 0;
  uint64_t chunk_start_ns = records.front().time_ns;
  for (auto _ : state) {
    const RingRecord& r = records[i];
    i = i + 1 == records.size() ? 0 : i + 1;
    writer->add_payload(r.type, r.payload);
    if (writer->pending_bytes() >= kFlushBytes || r.time_ns >= chunk_start_ns + kFlushPeriodNs ||
        i == 0) {
      (void)writer->flush();
      chunk_start_ns = records[i].time_ns;
    }
  }
  (void)writer->close();
  const auto size = std::filesystem::file_size(path);
  std::filesystem::remove(path);
  state.counters["bytes_per_sample"] = double(size) / double(state.iterations());
}

void BM_EncodeSample(benchmark::State& state) {
  std::vector<uint64_t> frames(30, 0x5580'0000'1000ull);
  std::vector<uint8_t> buffer(8192);
  size_t bytes = 0;
  uint64_t time = 0;
  for (auto _ : state) {
    ByteWriter w(std::span<uint8_t>(buffer.data(), buffer.size()));
    encode_sample(w, 1000, time += 100000, 95000, 0, frames, {});
    bytes = w.size();
    benchmark::DoNotOptimize(buffer.data());
  }
  state.counters["record_bytes"] = double(bytes);
}
BENCHMARK(BM_EncodeSample);

void BM_DumpWritePerSample(benchmark::State& state) {
  static const auto stream = steady_stream(1 << 17);
  write_records(state, stream);
}
BENCHMARK(BM_DumpWritePerSample)
    ->ArgNames({"version", "level"})
    ->Args({1, 3})
    ->Args({2, 1})
    ->Args({2, 3})
    ->Args({2, 6})
    ->Iterations(400000);

}  // namespace
}  // namespace inprof::internal

// --rewrite IN OUT [VERSION [LEVEL]]: writes every record of the dump IN again as the session's
// writer would, in format VERSION (default: the current one) at zstd LEVEL, and prints the
// bytes and the writer's CPU per sample (samples and repeats). Symbolicate OUT to compare.
int rewrite_main(int argc, char** argv) {
  using namespace inprof::internal;
  AllRecords in;
  const auto result = read_dump_file(argv[2], in);
  if (!result.ok || in.samples == 0) {
    std::fprintf(stderr, "dump_encoding_benchmark: %s: %s\n", argv[2],
                 result.ok ? "no samples" : result.error.c_str());
    return 1;
  }
  const auto version = static_cast<uint32_t>(argc > 4 ? std::atoi(argv[4]) : kDumpFormatVersion);
  const int level = argc > 5 ? std::atoi(argv[5]) : DumpWriter::kDefaultCompressionLevel;
  const uint64_t cpu_ns = rewrite(in.records, argv[3], version, level);
  const auto bytes = std::filesystem::file_size(argv[3]);
  std::printf(
      "version=%u level=%d samples=%llu bytes=%llu bytes_per_sample=%.2f "
      "writer_us_per_sample=%.3f\n",
      version, level, static_cast<unsigned long long>(in.samples),
      static_cast<unsigned long long>(bytes), double(bytes) / double(in.samples),
      double(cpu_ns) / 1000.0 / double(in.samples));
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 4 && std::strcmp(argv[1], "--rewrite") == 0) return rewrite_main(argc, argv);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
