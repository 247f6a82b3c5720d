// Per-thread stacks of labels (inprof::LabelScope). The owning thread pushes and pops; the
// stack copier's signal handler, running on that same thread, copies the live entries into the
// snapshot, so a sample's labels are exactly those active at the sampled instant.
#ifndef INPROF_LIB_LABEL_STACK_H_
#define INPROF_LIB_LABEL_STACK_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace inprof::internal {

struct LabelEntry {
  const char* name = nullptr;  // a string with static storage
  uint64_t address = 0;        // where the scope object lives: places the label in the stack
  uint16_t category = 0;
};

inline constexpr size_t kMaxLabelDepth = 64;

struct LabelStack {
  std::atomic<uint64_t> owner{0};  // thread id, 0 while free
  std::atomic<uint32_t> depth{0};  // may exceed kMaxLabelDepth; deeper entries are not kept
  LabelEntry entries[kMaxLabelDepth];

  void push(const LabelEntry& e) {
    const uint32_t d = depth.load(std::memory_order_relaxed);
    if (d < kMaxLabelDepth) {
      // Word by word, atomically: the sampler may read a sleeping thread's entries from its own
      // thread (and drops the copy if this thread ran meanwhile); no torn or racy word either way.
      __atomic_store_n(&entries[d].name, e.name, __ATOMIC_RELAXED);
      __atomic_store_n(&entries[d].address, e.address, __ATOMIC_RELAXED);
      __atomic_store_n(&entries[d].category, e.category, __ATOMIC_RELAXED);
    }
    // The handler runs on this thread: a compiler fence orders the entry before the depth.
    std::atomic_signal_fence(std::memory_order_release);
    depth.store(d + 1, std::memory_order_relaxed);
  }
  void pop() {
    const uint32_t d = depth.load(std::memory_order_relaxed);
    if (d > 0) depth.store(d - 1, std::memory_order_relaxed);
  }
};

// SUSPENDED: copies the live entries of `stack` if it belongs to `tid`. No allocation, no lock.
inline size_t copy_labels(const LabelStack* stack, uint64_t tid, LabelEntry* out, size_t max) {
  if (stack == nullptr || stack->owner.load(std::memory_order_relaxed) != tid) return 0;
  size_t n = stack->depth.load(std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_acquire);
  if (n > kMaxLabelDepth) n = kMaxLabelDepth;
  if (n > max) n = max;
  for (size_t i = 0; i < n; ++i) {
    out[i].name = __atomic_load_n(&stack->entries[i].name, __ATOMIC_RELAXED);
    out[i].address = __atomic_load_n(&stack->entries[i].address, __ATOMIC_RELAXED);
    out[i].category = __atomic_load_n(&stack->entries[i].category, __ATOMIC_RELAXED);
  }
  return n;
}

// The calling thread's label stack, created on first use and recycled when the thread exits.
LabelStack& current_label_stack();
// The label stack of thread `tid`, if it has one (for the sampler, before it stops the thread).
const LabelStack* find_label_stack(uint64_t tid);
// The registry's lock, held across fork() (see Declarations::mutex).
std::mutex& label_stacks_mutex();

}  // namespace inprof::internal

#endif  // INPROF_LIB_LABEL_STACK_H_
