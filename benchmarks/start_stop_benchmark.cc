// Cost of Profiler::start() and stop(), seen by the calling thread.
//
//   first_start_ms / first_stop_ms: the first session in this process (nothing warm yet:
//     libdw/libelf initialisation, the first /proc reads, thread creation), measured in main()
//     before any benchmark runs; first_start_cpu_ms: the CPU all threads spent meanwhile (the
//     rest of the wall time is waiting for the new threads to be scheduled).
//   BM_StartStop: later sessions; start_us and stop_us split each iteration.
//   BM_FirstTick: what start() leaves to the sampler's first tick: listing the modules, opening
//     the unwind tables (ELF + .eh_frame_hdr via libdw) of those a busy thread's stack passes
//     through, and its first sample; a fresh sampler each iteration, so nothing is cached.
#include <benchmark/benchmark.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "inprof/profiler.h"
#include "sampling/sampler.h"
#include "sampling/stack_copier.h"
#include "sampling/thread_lister.h"
#include "session/metadata_queue.h"
#include "session/process_info.h"
#include "session/ring_buffer.h"
#include "unwind/dwarf_unwinder.h"

namespace {

using inprof::internal::monotonic_ns;

std::string dump_path() {
  return (std::filesystem::temp_directory_path() /
          ("inprof-startstop-" + std::to_string(getpid()) + ".inprof"))
      .string();
}

inprof::Options options() {
  inprof::Options o;
  o.output_path = dump_path();
  return o;
}

double g_first_start_ms = 0, g_first_stop_ms = 0, g_first_start_cpu_ms = 0;

uint64_t process_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

void BM_StartStop(benchmark::State& state) {
  uint64_t start_total = 0, stop_total = 0, start_cpu_total = 0;
  for (auto _ : state) {
    const uint64_t cpu = process_cpu_ns();
    const uint64_t a = monotonic_ns();
    if (!inprof::Profiler::start(options())) return state.SkipWithError("start failed");
    const uint64_t b = monotonic_ns();
    start_cpu_total += process_cpu_ns() - cpu;
    (void)inprof::Profiler::stop();
    const uint64_t c = monotonic_ns();
    start_total += b - a;
    stop_total += c - b;
  }
  const double n = double(state.iterations());
  state.counters["start_us"] = double(start_total) / n / 1000.0;
  state.counters["start_cpu_us"] = double(start_cpu_total) / n / 1000.0;
  state.counters["first_start_cpu_ms"] = g_first_start_cpu_ms;
  state.counters["stop_us"] = double(stop_total) / n / 1000.0;
  state.counters["first_start_ms"] = g_first_start_ms;
  state.counters["first_stop_ms"] = g_first_stop_ms;
  std::filesystem::remove(dump_path());
}
BENCHMARK(BM_StartStop)->Unit(benchmark::kMillisecond)->Iterations(50);

void BM_FirstTick(benchmark::State& state) {
  using namespace inprof::internal;
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  RingBuffer ring(1 << 20);
  MetadataQueue metadata;
  uint64_t written = 0;
  for (auto _ : state) {
    state.PauseTiming();
    inprof::Status status;
    auto copier = StackCopier::create({}, &status);
    if (!copier) {
      state.SkipWithError(status.message().c_str());
      break;
    }
    auto sampler =
        std::make_unique<Sampler>(SamplerConfig{}, std::move(copier),
                                  std::make_unique<DwarfUnwinder>(CfiProvider::create(), true),
                                  ThreadLister::create(), ModuleLister::create(), ring, metadata);
    sampler->exclude_thread(current_thread_id());
    state.ResumeTiming();
    sampler->tick();
    state.PauseTiming();
    written += sampler->stats().samples_written;
    sampler.reset();
    ring.drain([](uint8_t, std::span<const uint8_t>) {});
    metadata.take();
    state.ResumeTiming();
  }
  stop = true;
  busy.join();
  state.counters["samples"] = double(written) / double(state.iterations());
}
BENCHMARK(BM_FirstTick)->Unit(benchmark::kMillisecond)->Iterations(30);

}  // namespace

int main(int argc, char** argv) {
  const uint64_t cpu = process_cpu_ns();
  const uint64_t a = monotonic_ns();
  const bool started = static_cast<bool>(inprof::Profiler::start(options()));
  const uint64_t b = monotonic_ns();
  g_first_start_cpu_ms = double(process_cpu_ns() - cpu) / 1e6;
  // Let the first ticks run (module listing, first unwinds) so stop() has their output to write.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const uint64_t c = monotonic_ns();
  if (started) (void)inprof::Profiler::stop();
  const uint64_t d = monotonic_ns();
  g_first_start_ms = double(b - a) / 1e6;
  g_first_stop_ms = double(d - c) / 1e6;
  std::fprintf(stderr, "first start(): %.3f ms (CPU %.3f ms), its stop(): %.3f ms\n",
               g_first_start_ms, g_first_start_cpu_ms, g_first_stop_ms);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
