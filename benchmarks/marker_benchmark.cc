// Cost of recording markers, and of a thread that sleeps, per sampler tick.
//
//   BM_Marker*: one marker from the calling thread into a running session's buffer (the writer
//     thread drains it concurrently). The buffer is large enough that nothing is dropped.
//   BM_MarkerNotRecording: the same call with no session: one relaxed atomic load.
//   BM_IdleThreadTick: a sampler tick over N sleeping threads, per thread (they are repeated,
//     not interrupted).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "inprof/markers.h"
#include "inprof/profiler.h"
#include "sampling/module_lister.h"
#include "sampling/sampler.h"
#include "sampling/stack_copier.h"
#include "sampling/thread_lister.h"
#include "session/metadata_queue.h"
#include "session/process_info.h"
#include "session/ring_buffer.h"
#include "unwind/dwarf_unwinder.h"

namespace {

std::string dump_path() {
  return (std::filesystem::temp_directory_path() /
          ("inprof-bench-" + std::to_string(getpid()) + ".inprof"))
      .string();
}

class Session {
 public:
  Session() {
    inprof::Options o;
    o.output_path = dump_path();
    o.buffer_size = 512u << 20;
    o.interval = std::chrono::milliseconds(100);  // the benchmark thread, not the sampler
    ok = inprof::Profiler::start(o).ok();
  }
  ~Session() {
    (void)inprof::Profiler::stop();
    std::filesystem::remove(dump_path());
  }
  bool ok = false;
};

void BM_MarkerInstant(benchmark::State& state) {
  Session session;
  if (!session.ok) return state.SkipWithError("cannot start");
  for (auto _ : state) inprof::marker("tick");
}
BENCHMARK(BM_MarkerInstant)->Iterations(2000000);

void BM_MarkerScope(benchmark::State& state) {
  Session session;
  if (!session.ok) return state.SkipWithError("cannot start");
  for (auto _ : state) {
    INPROF_SCOPED_MARKER("scope");
  }
}
BENCHMARK(BM_MarkerScope)->Iterations(2000000);

struct Request {
  static constexpr std::string_view kName = "Request";
  static constexpr inprof::MarkerField kFields[] = {{"url", "URL", inprof::Format::kUrl},
                                                    {"bytes", "Size", inprof::Format::kBytes}};
};

void BM_MarkerTyped(benchmark::State& state) {
  Session session;
  if (!session.ok) return state.SkipWithError("cannot start");
  for (auto _ : state) {
    inprof::marker<Request>("fetch", inprof::kCategoryNetwork, "https://example.org/x", 4096);
  }
}
BENCHMARK(BM_MarkerTyped)->Iterations(2000000);

void BM_MarkerNotRecording(benchmark::State& state) {
  for (auto _ : state) INPROF_MARKER("tick");
}
BENCHMARK(BM_MarkerNotRecording);

void BM_IdleThreadTick(benchmark::State& state) {
  using namespace inprof::internal;
  const int threads = static_cast<int>(state.range(0));
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::vector<std::thread> sleepers;
  for (int i = 0; i < threads; ++i) {
    sleepers.emplace_back([&] {
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return done; });
    });
  }
  inprof::Status status;
  auto copier = StackCopier::create({}, &status);
  if (!copier) return state.SkipWithError(status.message().c_str());
  RingBuffer ring(64 << 20);
  MetadataQueue metadata;
  SamplerConfig config;
  Sampler sampler(config, std::move(copier),
                  std::make_unique<DwarfUnwinder>(CfiProvider::create(), true),
                  ThreadLister::create(), ModuleLister::create(), ring, metadata);
  sampler.exclude_thread(inprof::internal::current_thread_id());
  for (int i = 0; i < 5; ++i) sampler.tick();  // first samples, then the run counts settle
  for (auto _ : state) {
    sampler.tick();
    state.PauseTiming();
    ring.drain([](uint8_t, std::span<const uint8_t>) {});
    metadata.take();
    state.ResumeTiming();
  }
  state.counters["per_thread_ns"] = benchmark::Counter(
      static_cast<double>(threads),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  {
    std::lock_guard lock(mutex);
    done = true;
  }
  cv.notify_all();
  for (auto& t : sleepers) t.join();
}
BENCHMARK(BM_IdleThreadTick)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
