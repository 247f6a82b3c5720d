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
  // When the thread first pushed a label that has no record in its stack (the C API's, or a
  // scope living outside the stack); 0 if none. A copy of its stack does not show such labels.
  std::atomic<uint64_t> off_stack_since_ns{0};
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

// The record a LabelScope keeps in its own storage while its label is pushed (the public class
// holds it as three opaque words). The first word binds the record to where it lives, so a copy
// of the stack shows a pushed label's record at its place and nothing that merely looks like one;
// a popped scope clears it before the label leaves the label stack.
struct LabelRecord {
  uint64_t tag;  // kLabelRecordMagic ^ the record's own address; 0 when not pushed
  uint64_t name;
  uint64_t category;
};
inline constexpr uint64_t kLabelRecordMagic = 0x6c62'6c69'6e70'726full;  // "inprlbl"

// Fills `record` (at its final address) for a pushed label, the tag last: a sample taken between
// two of these stores, on this thread, sees a whole record or none.
inline void write_label_record(LabelRecord* record, const char* name, uint16_t category) {
  __atomic_store_n(&record->name, reinterpret_cast<uint64_t>(name), __ATOMIC_RELAXED);
  __atomic_store_n(&record->category, uint64_t{category}, __ATOMIC_RELAXED);
  std::atomic_signal_fence(std::memory_order_release);
  __atomic_store_n(&record->tag, kLabelRecordMagic ^ reinterpret_cast<uint64_t>(record),
                   __ATOMIC_RELAXED);
}
// Clears it: an atomic store, which the compiler cannot drop as a store to a dying object.
inline void clear_label_record(LabelRecord* record) {
  __atomic_store_n(&record->tag, uint64_t{0}, __ATOMIC_RELAXED);
  std::atomic_signal_fence(std::memory_order_release);
}

// The labels whose records lie in a copy of a thread's stack (`size` bytes that were at
// `address`), outermost first as in a LabelStack; at most `max` (the outermost ones). For copies
// the kernel took, where no handler ran to read the label stack. Reads only the copy.
size_t find_label_records(const uint8_t* copy, size_t size, uint64_t address, LabelEntry* out,
                          size_t max);

// The calling thread's label stack, created on first use and recycled when the thread exits.
LabelStack& current_label_stack();
// The label stack of thread `tid`, if it has one (for the sampler, before it stops the thread).
const LabelStack* find_label_stack(uint64_t tid);
// The registry's lock, held across fork() (see Declarations::mutex).
std::mutex& label_stacks_mutex();

}  // namespace inprof::internal

#endif  // INPROF_LIB_LABEL_STACK_H_
