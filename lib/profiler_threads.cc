#include "profiler_threads.h"

#include <atomic>

namespace inprof::internal {
namespace {

constexpr int kSlots = 32;
std::atomic<uint64_t> g_threads[kSlots];

// Forgets the thread when it exits (a thread_local's destructor runs then).
struct Mark {
  int slot = -1;
  ~Mark() {
    if (slot >= 0) g_threads[slot].store(0, std::memory_order_release);
  }
};
thread_local Mark t_mark;

}  // namespace

void mark_profiler_thread(uint64_t tid) {
  if (t_mark.slot >= 0 || tid == 0) return;
  for (int i = 0; i < kSlots; ++i) {
    uint64_t empty = 0;
    if (g_threads[i].compare_exchange_strong(empty, tid, std::memory_order_acq_rel)) {
      t_mark.slot = i;
      return;
    }
  }
}

bool is_profiler_thread(uint64_t tid) {
  for (const auto& slot : g_threads) {
    if (slot.load(std::memory_order_acquire) == tid) return true;
  }
  return false;
}

}  // namespace inprof::internal
