#include "markers/label_stack.h"

#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "session/process_info.h"
#if defined(INPROF_THREAD_EXIT_HOOK)
#include "threads/thread_exit_hook.h"
#endif

namespace inprof::internal {
namespace {

// Stacks are never freed (a signal handler may be reading one), only recycled.
struct LabelStackRegistry {
  std::mutex mutex;
  std::unordered_map<uint64_t, LabelStack*> by_thread;
  std::vector<LabelStack*> free;
};

LabelStackRegistry& registry() {
  // Never destroyed (threads exit during static destruction), and in static storage: the sampler
  // may be the first to ask, and its allocations come from the profiler's own heap, where a leak
  // checker looks for no pointers (it reported the program's label stacks as leaked).
  alignas(LabelStackRegistry) static unsigned char storage[sizeof(LabelStackRegistry)];
  static auto* r = new (storage) LabelStackRegistry;
  return *r;
}

void recycle(LabelStack* stack, uint64_t tid) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.by_thread.erase(tid);
  stack->owner.store(0, std::memory_order_relaxed);
  stack->depth.store(0, std::memory_order_relaxed);
  stack->off_stack_since_ns.store(0, std::memory_order_relaxed);
  r.free.push_back(stack);
}

#if defined(INPROF_THREAD_EXIT_HOOK)
// The thread's stack goes back through the platform's exit hook (thread_exit_hook.h says why);
// the thread_local itself has no destructor.
struct ThreadLabels {
  LabelStack* stack = nullptr;
  uint64_t tid = 0;
};

void recycle_at_exit(void* stack) {
  auto* s = static_cast<LabelStack*>(stack);
  recycle(s, s->owner.load(std::memory_order_relaxed));
}

void recycle_when_thread_exits(LabelStack* stack) {
  static unsigned slot = 0;
  static const bool have_slot = create_thread_exit_slot(recycle_at_exit, &slot);
  if (have_slot) set_thread_exit_value(slot, stack);  // without a slot, the stack stays taken
}
#else
// Gives the thread's stack back when the thread exits.
struct ThreadLabels {
  LabelStack* stack = nullptr;
  uint64_t tid = 0;
  ~ThreadLabels() {
    if (stack != nullptr) recycle(stack, tid);
  }
};

void recycle_when_thread_exits(LabelStack*) {}  // the destructor above does it
#endif

thread_local ThreadLabels t_labels;

}  // namespace

LabelStack& current_label_stack() {
  if (t_labels.stack != nullptr) return *t_labels.stack;
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  LabelStack* stack;
  if (!r.free.empty()) {
    stack = r.free.back();
    r.free.pop_back();
  } else {
    stack = new LabelStack;
  }
  t_labels.tid = current_thread_id();
  stack->owner.store(t_labels.tid, std::memory_order_relaxed);
  r.by_thread[t_labels.tid] = stack;
  t_labels.stack = stack;
  recycle_when_thread_exits(stack);
  return *stack;
}

size_t find_label_records(const uint8_t* copy, size_t size, uint64_t address, LabelEntry* out,
                          size_t max) {
  if (max == 0) return 0;
  // Records are 8-aligned in the stack; upward from SP they come innermost first. Keeps the
  // outermost `max` in a ring, then turns them outermost first.
  const uint64_t skip = (8 - address % 8) % 8;
  size_t found = 0;
  for (uint64_t at = skip; at + sizeof(LabelRecord) <= size; at += 8) {
    LabelRecord record;
    std::memcpy(&record, copy + at, sizeof(record));
    if (record.tag != (kLabelRecordMagic ^ (address + at))) continue;
    out[found % max] = LabelEntry{reinterpret_cast<const char*>(record.name), address + at,
                                  static_cast<uint16_t>(record.category)};
    ++found;
    at += sizeof(LabelRecord) - 8;
  }
  const size_t kept = found < max ? found : max;
  // out[(found - 1) % max] is the outermost; reverse the ring into outermost-first order.
  LabelEntry ordered[kMaxLabelDepth];
  for (size_t i = 0; i < kept && i < kMaxLabelDepth; ++i) ordered[i] = out[(found - 1 - i) % max];
  for (size_t i = 0; i < kept && i < kMaxLabelDepth; ++i) out[i] = ordered[i];
  return kept;
}

const LabelStack* find_label_stack(uint64_t tid) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.by_thread.find(tid);
  return it == r.by_thread.end() ? nullptr : it->second;
}

}  // namespace inprof::internal

namespace inprof::internal {
std::mutex& label_stacks_mutex() { return registry().mutex; }
}  // namespace inprof::internal
