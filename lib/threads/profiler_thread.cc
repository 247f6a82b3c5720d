#include "threads/profiler_threads.h"

namespace inprof::internal {

// Per OS (platform/<os>/profiler_thread_<os>.cc or profiler_thread_std.cc): 0 when refused.
uintptr_t start_thread_of_profiler(const char* name, std::function<void()> body);
void join_thread_of_profiler(uintptr_t handle);
void detach_thread_of_profiler(uintptr_t handle);
std::optional<uint64_t> cpu_ns_of_profiler_thread(uintptr_t handle);

ProfilerThread& ProfilerThread::operator=(ProfilerThread&& other) noexcept {
  if (this != &other) {
    if (joinable()) join();
    handle_ = other.handle_;
    other.handle_ = 0;
  }
  return *this;
}

ProfilerThread::~ProfilerThread() {
  if (joinable()) join();
}

bool ProfilerThread::start(const char* name, std::function<void()> body) {
  if (joinable()) join();
  handle_ = start_thread_of_profiler(name, std::move(body));
  return handle_ != 0;
}

void ProfilerThread::join() {
  if (handle_ == 0) return;
  join_thread_of_profiler(handle_);
  handle_ = 0;
}

std::optional<uint64_t> ProfilerThread::cpu_ns() const {
  if (handle_ == 0) return std::nullopt;
  return cpu_ns_of_profiler_thread(handle_);
}

void ProfilerThread::detach() {
  if (handle_ == 0) return;
  detach_thread_of_profiler(handle_);
  handle_ = 0;
}

}  // namespace inprof::internal
