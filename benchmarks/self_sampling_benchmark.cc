// Self-sampling (lib/self_sampling.h), both sides of one sample:
//
//   BM_SelfSampleTargetCost: a busy thread interrupted by its own timer at 10 kHz; the extra CPU
//     its fixed work takes, per snapshot it queued (kernel signal delivery included): what the
//     sampled thread pays. Counter target_us_per_sample.
//   BM_SelfSampleCollect: the sampler's tick collecting such a thread's queue (unwind with frame
//     pointers, encode, ring write). Counter sampler_us_per_sample: the sampler thread's CPU per
//     sample written.
#include <benchmark/benchmark.h>
#include <time.h>

#include <atomic>
#include <thread>

#include "frame_pointer_unwinder.h"
#include "metadata_queue.h"
#include "module_lister.h"
#include "process_info.h"
#include "ring_buffer.h"
#include "sampler.h"
#include "stack_copier.h"
#include "thread_lister.h"

namespace inprof::internal {
namespace {

constexpr uint64_t kIntervalNs = 100000;  // 10 kHz

uint64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// A thread that does fixed units of work 30 calls deep and reports the CPU each batch took.
struct Target {
  std::atomic<uint64_t> tid{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> units{0};
  std::atomic<uint64_t> cpu_ns{0};
};

__attribute__((noinline)) void work(Target& t) {
  t.tid = current_thread_id();
  uint64_t x = 1;
  while (!t.stop.load(std::memory_order_relaxed)) {
    for (int i = 0; i < 10000; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      asm volatile("" : "+r"(x));
    }
    t.units.fetch_add(1, std::memory_order_relaxed);
    t.cpu_ns.store(thread_cpu_ns(), std::memory_order_relaxed);
  }
}

__attribute__((noinline)) void descend(Target& t, int depth) {
  if (depth > 0) {
    descend(t, depth - 1);
  } else {
    work(t);
  }
  asm volatile("" ::: "memory");  // no tail call
}

struct Session {
  Session() {
    Status status;
    StackCopier::Config config;
    config.interval = std::chrono::nanoseconds(kIntervalNs);
    config.timeout = std::chrono::seconds(1);
    auto copier = StackCopier::create(config, &status);
    if (!copier) {
      error = status.message();
      return;
    }
    SamplerConfig sc;
    sc.interval_ns = kIntervalNs;
    sampler =
        std::make_unique<Sampler>(sc, std::move(copier), std::make_unique<FramePointerUnwinder>(),
                                  ThreadLister::create(), ModuleLister::create(), ring, metadata);
    sampler->exclude_thread(current_thread_id());
  }
  void tick() {
    sampler->tick();
    ring.drain([](uint8_t, std::span<const uint8_t>) {});
    metadata.take();
  }
  // Ticks until the target samples itself; false if it never does (no timers here).
  bool wait_self_sampled() {
    for (int i = 0; i < 5000 && sampler->self_sampled_threads() == 0; ++i) {
      tick();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return sampler->self_sampled_threads() > 0;
  }
  std::string error;
  RingBuffer ring{16 << 20};
  MetadataQueue metadata;
  std::unique_ptr<Sampler> sampler;
};

// CPU per unit of work while `units` more units complete.
double cpu_per_unit(Target& t, uint64_t units) {
  const uint64_t u0 = t.units.load(), c0 = t.cpu_ns.load();
  while (t.units.load() < u0 + units) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return double(t.cpu_ns.load() - c0) / double(t.units.load() - u0);
}

void BM_SelfSampleTargetCost(benchmark::State& state) {
  Target target;
  std::thread thread([&] { descend(target, 30); });
  while (target.tid == 0) std::this_thread::yield();
  double cost_us = 0;
  for (auto _ : state) {
    const double base = cpu_per_unit(target, 300);  // no profiler
    Session session;
    if (!session.error.empty()) {
      state.SkipWithError(session.error.c_str());
      break;
    }
    if (!session.wait_self_sampled()) {
      state.SkipWithError("the thread was never self-sampled");
      break;
    }
    const uint64_t written0 = session.sampler->stats().samples_written;
    const uint64_t u0 = target.units.load(), c0 = target.cpu_ns.load();
    while (target.units.load() < u0 + 300) {
      session.tick();
      std::this_thread::sleep_for(std::chrono::nanoseconds(session.sampler->period_ns()));
    }
    const uint64_t units = target.units.load() - u0, cpu = target.cpu_ns.load() - c0;
    session.tick();
    const uint64_t samples = session.sampler->stats().samples_written - written0;
    cost_us = samples ? (double(cpu) - base * double(units)) / double(samples) / 1000 : 0;
  }
  target.stop = true;
  thread.join();
  state.counters["target_us_per_sample"] = cost_us;
}
BENCHMARK(BM_SelfSampleTargetCost)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SelfSampleCollect(benchmark::State& state) {
  Target target;
  std::thread thread([&] { descend(target, 30); });
  while (target.tid == 0) std::this_thread::yield();
  Session session;
  if (!session.error.empty()) return state.SkipWithError(session.error.c_str());
  if (!session.wait_self_sampled()) return state.SkipWithError("never self-sampled");
  uint64_t samples = 0, cpu = 0;
  for (auto _ : state) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(session.sampler->period_ns()));
    const uint64_t written = session.sampler->stats().samples_written;
    const uint64_t c0 = thread_cpu_ns();
    session.tick();
    cpu += thread_cpu_ns() - c0;
    samples += session.sampler->stats().samples_written - written;
  }
  target.stop = true;
  thread.join();
  state.counters["samples_per_tick"] = double(samples) / double(state.iterations());
  state.counters["sampler_us_per_sample"] = samples ? double(cpu) / double(samples) / 1000 : 0;
}
BENCHMARK(BM_SelfSampleCollect)->Iterations(500)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace inprof::internal

BENCHMARK_MAIN();
