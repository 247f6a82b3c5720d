#include "threads/profiler_threads.h"

#include <atomic>

#include "session/process_info.h"

namespace inprof::internal {
namespace {

constexpr int kSlots = 32;
std::atomic<uint64_t> g_threads[kSlots];

// Initial-exec: in the static TLS block every thread is created with. The general model would,
// in a dlopen()ed library, allocate the variable on a thread's first use, with malloc.
#if defined(__linux__)
__attribute__((tls_model("initial-exec")))
#endif
constinit thread_local bool t_profiler_thread = false;

}  // namespace

ProfilerThreadMark::ProfilerThreadMark() {
  t_profiler_thread = true;
  const uint64_t tid = current_thread_id();
  for (int i = 0; i < kSlots && tid != 0; ++i) {
    uint64_t empty = 0;
    if (g_threads[i].compare_exchange_strong(empty, tid, std::memory_order_acq_rel)) {
      slot_ = i;
      return;
    }
  }
}

ProfilerThreadMark::~ProfilerThreadMark() {
  if (slot_ >= 0) g_threads[slot_].store(0, std::memory_order_release);
}

bool on_profiler_thread() { return t_profiler_thread; }

bool is_profiler_thread(uint64_t tid) {
  for (const auto& slot : g_threads) {
    if (slot.load(std::memory_order_acquire) == tid) return true;
  }
  return false;
}

}  // namespace inprof::internal
