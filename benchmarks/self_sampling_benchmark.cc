// Self-sampling (lib/sampling/self_sampling.h), both sides of one sample:
//
//   BM_SelfSampleTargetCost: a busy thread interrupted by its own timer at 10 kHz; the extra CPU
//     its fixed work takes, per snapshot it queued (kernel signal delivery included): what the
//     sampled thread pays. Counter target_us_per_sample.
//   BM_TimerSignalFloor: the same thread interrupted at the same rate by its own timer with an
//     empty handler: what the kernel's timer signal alone costs it (no profiler). The target cost
//     above minus this floor is inprof's own share. Counter target_us_per_signal.
//   BM_SelfSampleCollect/0, /1: the sampler's tick collecting such a thread's queue (unwind with
//     frame pointers (/0) or DWARF CFI (/1), encode, ring write). Counter sampler_us_per_sample:
//     the sampler thread's CPU per sample written. A full sample costs the sum of the two.
#include <benchmark/benchmark.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <thread>

#include "sampling/module_lister.h"
#include "sampling/sampler.h"
#include "sampling/stack_copier.h"
#include "sampling/thread_lister.h"
#include "session/metadata_queue.h"
#include "session/process_info.h"
#include "session/ring_buffer.h"
#include "unwind/dwarf/cfi_provider.h"
#include "unwind/dwarf_unwinder.h"
#include "unwind/frame_pointer_unwinder.h"

namespace inprof::internal {
namespace {

constexpr uint64_t kIntervalNs = 100000;  // 10 kHz
constexpr uint64_t kUnits = 3000;         // ~0.1 s of work per measurement

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
  explicit Session(bool dwarf = false) {
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
    std::unique_ptr<Unwinder> unwinder;
    if (dwarf) {
      unwinder = std::make_unique<DwarfUnwinder>(CfiProvider::create(), true);
    } else {
      unwinder = std::make_unique<FramePointerUnwinder>();
    }
    sampler =
        std::make_unique<Sampler>(sc, std::move(copier), std::move(unwinder),
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
    const double base = cpu_per_unit(target, kUnits);  // no profiler
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
    while (target.units.load() < u0 + kUnits) {
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

std::atomic<uint64_t> g_floor_signals{0};
void empty_handler(int) { g_floor_signals.fetch_add(1, std::memory_order_relaxed); }

void BM_TimerSignalFloor(benchmark::State& state) {
  Target target;
  std::thread thread([&] { descend(target, 30); });
  while (target.tid == 0) std::this_thread::yield();
  struct sigaction sa = {};
  sa.sa_handler = empty_handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  const int signal = SIGRTMIN + 3;
  struct sigaction old;
  sigaction(signal, &sa, &old);
  double cost_us = 0;
  for (auto _ : state) {
    const double base = cpu_per_unit(target, kUnits);  // no timer
    sigevent sev = {};
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = signal;
    sev._sigev_un._tid = static_cast<pid_t>(target.tid.load());
    timer_t timer;
    if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0) {
      state.SkipWithError("timer_create failed");
      break;
    }
    itimerspec spec = {};
    spec.it_interval.tv_nsec = kIntervalNs;
    spec.it_value.tv_nsec = kIntervalNs;
    const uint64_t s0 = g_floor_signals.load();
    const uint64_t u0 = target.units.load(), c0 = target.cpu_ns.load();
    timer_settime(timer, 0, &spec, nullptr);
    while (target.units.load() < u0 + kUnits) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const uint64_t units = target.units.load() - u0, cpu = target.cpu_ns.load() - c0;
    timer_delete(timer);
    const uint64_t signals = g_floor_signals.load() - s0;
    cost_us = signals ? (double(cpu) - base * double(units)) / double(signals) / 1000 : 0;
  }
  target.stop = true;
  thread.join();
  sigaction(signal, &old, nullptr);
  state.counters["target_us_per_signal"] = cost_us;
}
BENCHMARK(BM_TimerSignalFloor)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SelfSampleCollect(benchmark::State& state) {
  Target target;
  std::thread thread([&] { descend(target, 30); });
  while (target.tid == 0) std::this_thread::yield();
  Session session(state.range(0) == 1);
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
BENCHMARK(BM_SelfSampleCollect)->Arg(0)->Arg(1)->Iterations(500)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace inprof::internal

BENCHMARK_MAIN();
