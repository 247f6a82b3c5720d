// Cost of one sample on this machine.
//
//   target_pause_p50_us / _p99_us: the longest gap the target thread saw in its own clock loop
//     around each sample: signal delivery, our handler, return. This is what the profiled program
//     pays per sample.
//   Time column (manual time, mean) and sample_p50_us / _p99_us: the sampler's work for one
//     sample once the target's own timer has delivered its snapshot — unwind (frame pointers or
//     DWARF), encoding, ring-buffer write. (The snapshot comes at the target's next expiry, as
//     in a session: its wait is not the sampler's work.)
//   frames: frames recovered per sample (the target's recursion depth plus its thread start).
#include <benchmark/benchmark.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "dump/dump_records.h"
#include "sampling/module_lister.h"
#include "sampling/sample_once.h"
#include "sampling/stack_copier.h"
#include "session/process_info.h"
#include "session/ring_buffer.h"
#include "unwind/dwarf_unwinder.h"
#include "unwind/frame_pointer_unwinder.h"

namespace inprof::internal {
namespace {

struct Target {
  std::atomic<uint64_t> tid{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> max_gap_ns{0};
  std::atomic<uint64_t> loops{0};
};

__attribute__((noinline)) void measure_gaps(Target& t) {
  t.tid = current_thread_id();
  uint64_t previous = monotonic_ns();
  while (!t.stop.load(std::memory_order_relaxed)) {
    const uint64_t now = monotonic_ns();
    const uint64_t gap = now - previous;
    if (gap > t.max_gap_ns.load(std::memory_order_relaxed)) {
      t.max_gap_ns.store(gap, std::memory_order_relaxed);
    }
    previous = now;
    t.loops.fetch_add(1, std::memory_order_release);
  }
}

__attribute__((noinline)) void recurse(Target& t, int depth) {
  if (depth > 0) {
    recurse(t, depth - 1);
  } else {
    measure_gaps(t);
  }
  asm volatile("" ::: "memory");  // no tail call: every level keeps its frame
}

uint64_t percentile(std::vector<uint64_t> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

std::unique_ptr<Unwinder> make_unwinder(bool dwarf) {
  if (!dwarf) return std::make_unique<FramePointerUnwinder>();
  auto unwinder = std::make_unique<DwarfUnwinder>(CfiProvider::create(), true);
  std::vector<ModuleInfo> modules;
  ModuleLister::create()->list(modules);
  unwinder->set_modules(modules);
  return unwinder;
}

// range(0): recursion depth; range(1): 0 = frame pointers, 1 = DWARF.
void BM_OneSample(benchmark::State& state) {
  const int depth = static_cast<int>(state.range(0));
  auto unwinder_ptr = make_unwinder(state.range(1) != 0);
  Unwinder& unwinder = *unwinder_ptr;
  Status status;
  // A loaded machine may keep the target off the CPU for a while: wait, rather than fail.
  auto copier = StackCopier::create({0, std::chrono::seconds(1)}, &status);
  if (!copier) {
    state.SkipWithError(status.message().c_str());
    return;
  }
  Target target;
  std::thread thread([&] { recurse(target, depth); });
  while (target.tid == 0) std::this_thread::yield();

  std::vector<uint8_t> stack(64 << 10);
  StackSnapshot snapshot;
  snapshot.buffer = stack.data();
  snapshot.capacity = stack.size();
  std::vector<uint64_t> frames(512);
  std::vector<uint8_t> encoded(8192);
  RingBuffer ring(8 << 20);
  std::vector<uint64_t> pauses, sampler_times;
  size_t frame_total = 0, samples = 0, copied_total = 0;

  for (auto _ : state) {
    // Let the target run undisturbed, then reset its gap meter.
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    target.max_gap_ns.store(0);
    CopyResult r = sample_once(*copier, target.tid, snapshot);
    const uint64_t begin = monotonic_ns();
    UnwindOutput out = unwinder.unwind(snapshot, frames);
    ByteWriter w(std::span<uint8_t>(encoded.data(), encoded.size()));
    encode_sample(w, target.tid, snapshot.time_ns, 1000, 0,
                  std::span<const uint64_t>(frames.data(), out.count), {});
    ring.write(static_cast<uint8_t>(RecordType::kSample), w.view());
    const uint64_t end = monotonic_ns();
    state.SetIterationTime(static_cast<double>(end - begin) * 1e-9);
    sampler_times.push_back(end - begin);
    if (r != CopyResult::kOk) {
      state.SkipWithError("copy failed");
      break;
    }
    ring.drain([](uint8_t, std::span<const uint8_t>) {});
    // Wait until the target has gone round its loop again, so its gap meter saw the pause.
    const uint64_t loops = target.loops.load(std::memory_order_acquire);
    while (target.loops.load(std::memory_order_acquire) < loops + 2) {
    }
    pauses.push_back(target.max_gap_ns.load());
    frame_total += out.count;
    copied_total += snapshot.stack_size;
    ++samples;
  }
  target.stop = true;
  thread.join();
  state.counters["frames"] = samples ? double(frame_total) / double(samples) : 0;
  state.counters["stack_bytes"] = samples ? double(copied_total) / double(samples) : 0;
  state.counters["target_pause_p50_us"] = double(percentile(pauses, 0.5)) / 1000.0;
  state.counters["target_pause_p99_us"] = double(percentile(pauses, 0.99)) / 1000.0;
  state.counters["sample_p50_us"] = double(percentile(sampler_times, 0.5)) / 1000.0;
  state.counters["sample_p99_us"] = double(percentile(sampler_times, 0.99)) / 1000.0;
}

BENCHMARK(BM_OneSample)
    ->ArgNames({"depth", "dwarf"})
    ->Args({8, 0})
    ->Args({38, 0})
    ->Args({8, 1})
    ->Args({38, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(3000);

// The floor on this machine: the same round trip with an empty handler and nothing copied or
// unwound (tgkill, the handler sets a flag, the sampler spins on it).
std::atomic<int> g_bare_flag{0};
void bare_handler(int) { g_bare_flag.store(1, std::memory_order_release); }

void BM_BareSignalRoundTrip(benchmark::State& state) {
  struct sigaction sa = {}, old = {};
  sa.sa_handler = bare_handler;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, &old);
  Target target;
  std::thread thread([&] { recurse(target, 8); });
  while (target.tid == 0) std::this_thread::yield();
  std::vector<uint64_t> pauses, times;
  for (auto _ : state) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    target.max_gap_ns.store(0);
    g_bare_flag.store(0);
    const uint64_t begin = monotonic_ns();
    syscall(SYS_tgkill, getpid(), static_cast<pid_t>(target.tid.load()), SIGUSR1);
    while (!g_bare_flag.load(std::memory_order_acquire)) {
    }
    const uint64_t end = monotonic_ns();
    state.SetIterationTime(static_cast<double>(end - begin) * 1e-9);
    times.push_back(end - begin);
    const uint64_t loops = target.loops.load(std::memory_order_acquire);
    while (target.loops.load(std::memory_order_acquire) < loops + 2) {
    }
    pauses.push_back(target.max_gap_ns.load());
  }
  target.stop = true;
  thread.join();
  sigaction(SIGUSR1, &old, nullptr);
  state.counters["sample_p50_us"] = double(percentile(times, 0.5)) / 1000.0;
  state.counters["sample_p99_us"] = double(percentile(times, 0.99)) / 1000.0;
  state.counters["target_pause_p50_us"] = double(percentile(pauses, 0.5)) / 1000.0;
  state.counters["target_pause_p99_us"] = double(percentile(pauses, 0.99)) / 1000.0;
}
BENCHMARK(BM_BareSignalRoundTrip)->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(3000);

// An unwinder alone, on a copy taken once. range(0): depth; range(1): 0 = frame pointers,
// 1 = DWARF with a warm cache, 2 = DWARF cold (a fresh unwinder: opens the modules, reads CFI).
void BM_Unwind(benchmark::State& state) {
  const int depth = static_cast<int>(state.range(0));
  const int mode = static_cast<int>(state.range(1));
  Status status;
  // A loaded machine may keep the target off the CPU for a while: wait, rather than fail.
  auto copier = StackCopier::create({0, std::chrono::seconds(1)}, &status);
  if (!copier) {
    state.SkipWithError(status.message().c_str());
    return;
  }
  Target target;
  std::thread thread([&] { recurse(target, depth); });
  while (target.tid == 0) std::this_thread::yield();
  std::vector<uint8_t> stack(64 << 10);
  StackSnapshot snapshot;
  snapshot.buffer = stack.data();
  snapshot.capacity = stack.size();
  sample_once(*copier, target.tid, snapshot);
  target.stop = true;
  thread.join();
  std::vector<uint64_t> frames(512);
  size_t count = 0;
  auto unwinder = make_unwinder(mode != 0);
  unwinder->unwind(snapshot, frames);  // warm
  for (auto _ : state) {
    if (mode == 2) {
      state.PauseTiming();
      unwinder = make_unwinder(true);
      state.ResumeTiming();
    }
    count = unwinder->unwind(snapshot, frames).count;
    benchmark::DoNotOptimize(frames.data());
  }
  state.counters["frames"] = double(count);
}

BENCHMARK(BM_Unwind)
    ->ArgNames({"depth", "mode"})
    ->Args({8, 0})
    ->Args({38, 0})
    ->Args({8, 1})
    ->Args({38, 1})
    ->Args({38, 2})
    ->Unit(benchmark::kNanosecond);

}  // namespace
}  // namespace inprof::internal

BENCHMARK_MAIN();
