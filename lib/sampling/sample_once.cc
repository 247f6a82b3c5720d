#include "sampling/sample_once.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "session/process_info.h"

namespace inprof::internal {
namespace {

void copy_snapshot(const StackSnapshot& from, StackSnapshot& to) {
  std::memcpy(to.regs, from.regs, sizeof(to.regs));
  to.time_ns = from.time_ns;
  to.thread_cpu_ns = from.thread_cpu_ns;
  to.expirations_merged = from.expirations_merged;
  to.stack_start = from.stack_start;
  to.stack_size = std::min(from.stack_size, to.capacity);
  to.stack_found = from.stack_found;
  to.stack_truncated = from.stack_truncated || from.stack_size > to.capacity;
  to.stack_region_known = from.stack_region_known;
  to.registers_partial = from.registers_partial;
  to.runnable = from.runnable;
  if (to.stack_size) std::memcpy(to.buffer, from.buffer, to.stack_size);
  to.label_count = std::min<size_t>(from.label_count, kMaxLabelDepth);
  std::copy(from.labels, from.labels + to.label_count, to.labels);
}

}  // namespace

CopyResult sample_once(StackCopier& copier, uint64_t tid, StackSnapshot& out,
                       std::chrono::nanoseconds timeout) {
  const uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(timeout.count());
  for (;;) {
    const CopyResult result = copier.copy(tid, out);
    if (result != CopyResult::kRunning) return result;
    SelfSampling* self = copier.self_sampling();
    if (self == nullptr) return CopyResult::kFailed;
    const int handle = self->start(tid, 0, out.label_source);
    if (handle < 0) return CopyResult::kFailed;
    const StackSnapshot* got = nullptr;
    // Its first snapshot may predate its stack's mapping being known: wait for one that has it.
    // A thread that fell asleep meanwhile never answers: copied again after a while.
    const uint64_t give_up = std::min(deadline, monotonic_ns() + 50000000);
    while (monotonic_ns() < give_up) {
      got = self->front(handle);
      if (got != nullptr && got->stack_region_known) break;
      if (got != nullptr) {
        self->set_stack(handle, got->sp());
        self->pop(handle);
        got = nullptr;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (got != nullptr) copy_snapshot(*got, out);
    self->abandon(handle);  // at once: the next call may come right away
    if (got != nullptr) return CopyResult::kOk;
    if (monotonic_ns() >= deadline) return CopyResult::kTimedOut;
  }
}

}  // namespace inprof::internal
