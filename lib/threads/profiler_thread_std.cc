// Where the profiler's threads need nothing the standard library cannot give (Windows, macOS).
#include <thread>

#include "session/process_info.h"
#include "threads/profiler_threads.h"

namespace inprof::internal {

uintptr_t start_thread_of_profiler(const char* name, std::function<void()> body) {
  auto* thread = new std::thread([name, body = std::move(body)] {
    // Marked before it is named: a sampler that sees it first sees no inprof name.
    const ProfilerThreadMark never_sampled;
    setup_profiler_thread(name);
    body();
  });
  return reinterpret_cast<uintptr_t>(thread);
}

void join_thread_of_profiler(uintptr_t handle) {
  auto* thread = reinterpret_cast<std::thread*>(handle);
  thread->join();
  delete thread;
}

void detach_thread_of_profiler(uintptr_t handle) {
  auto* thread = reinterpret_cast<std::thread*>(handle);
  thread->detach();
  delete thread;
}

// std::thread has no CPU clock: exit() waits for these threads as long as they take.
std::optional<uint64_t> cpu_ns_of_profiler_thread(uintptr_t) { return std::nullopt; }

}  // namespace inprof::internal
