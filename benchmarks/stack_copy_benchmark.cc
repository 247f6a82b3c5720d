// The stack copy alone, nothing unwound or encoded: the Linux copier's copy of a thread asleep in
// the kernel (two reads of /proc/self/task/TID/syscall, its CPU time twice, process_vm_readv of
// its stack; the thread itself is not disturbed), and the byte copies a running thread's handler
// makes, by size: the kernel's (process_vm_readv on our own process, what the handler uses) and
// a plain memcpy for comparison.
//
//   BM_StackCopy/depth: Time = one copy of the sleeping thread; stack_bytes = bytes copied.
//   BM_KernelCopyBytes/N: process_vm_readv of N bytes of our own memory.
//   BM_CopyBytes/N: memcpy of N bytes between two warm buffers.
#include <benchmark/benchmark.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "sampling/stack_copier.h"
#include "session/process_info.h"

namespace inprof::internal {
namespace {

struct Target {
  std::atomic<uint64_t> tid{0};
  std::atomic<bool> stop{false};
};

__attribute__((noinline)) void spin(Target& t) {
  t.tid = current_thread_id();
  while (!t.stop.load(std::memory_order_relaxed)) {
    timespec nap{0, 50000000};
    nanosleep(&nap, nullptr);
  }
}

__attribute__((noinline)) void recurse(Target& t, int depth) {
  char pad[64];  // a realistic frame size, so the copy grows with depth
  asm volatile("" : : "r"(pad) : "memory");
  if (depth > 0) {
    recurse(t, depth - 1);
  } else {
    spin(t);
  }
  asm volatile("" ::: "memory");  // no tail call
}

void BM_StackCopy(benchmark::State& state) {
  Status status;
  // A loaded machine may keep the target off the CPU for a while: wait, rather than fail.
  auto copier = StackCopier::create({0, std::chrono::seconds(1)}, &status);
  if (!copier) return state.SkipWithError(status.message().c_str());
  Target target;
  std::thread thread([&] { recurse(target, static_cast<int>(state.range(0))); });
  while (target.tid == 0) std::this_thread::yield();
  std::vector<uint8_t> stack(64 << 10);
  StackSnapshot snapshot;
  snapshot.buffer = stack.data();
  snapshot.capacity = stack.size();
  size_t bytes = 0;
  for (auto _ : state) {
    if (copier->copy(target.tid, snapshot) != CopyResult::kOk) {
      state.SkipWithError("copy failed");
      break;
    }
    bytes = snapshot.stack_size;
  }
  target.stop = true;
  thread.join();
  state.counters["stack_bytes"] = double(bytes);
}
BENCHMARK(BM_StackCopy)->ArgName("depth")->Arg(8)->Arg(38)->Arg(200)->Unit(benchmark::kMicrosecond);

void BM_KernelCopyBytes(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> from(n, 1), to(n);
  const int pid = getpid();
  for (auto _ : state) {
    iovec local{to.data(), n};
    iovec remote{from.data(), n};
    benchmark::DoNotOptimize(syscall(SYS_process_vm_readv, pid, &local, 1, &remote, 1, 0));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n));
}
BENCHMARK(BM_KernelCopyBytes)->Arg(2 << 10)->Arg(8 << 10)->Arg(32 << 10);

void BM_CopyBytes(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> from(n, 1), to(n);
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), n);
    benchmark::DoNotOptimize(to.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n));
}
BENCHMARK(BM_CopyBytes)->Arg(2 << 10)->Arg(8 << 10)->Arg(32 << 10);

}  // namespace
}  // namespace inprof::internal

BENCHMARK_MAIN();
