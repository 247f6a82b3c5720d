// The profiler's own threads (writer, sampler, stopper, signal triggers), which it never samples.
// Each holds a ProfilerThreadMark, a local of its thread function, for as long as it runs; so a
// program thread given a recycled thread id is sampled as usual. (Not a thread_local with a
// destructor: MinGW runs those after the thread's TLS is gone.) Bounded: a thread beyond the bound
// is sampled.
#ifndef INPROF_LIB_PROFILER_THREADS_H_
#define INPROF_LIB_PROFILER_THREADS_H_

#include <cstdint>
#include <functional>
#include <optional>

namespace inprof::internal {

class ProfilerThreadMark {
 public:
  ProfilerThreadMark();  // marks the calling thread
  ~ProfilerThreadMark();
  ProfilerThreadMark(const ProfilerThreadMark&) = delete;
  ProfilerThreadMark& operator=(const ProfilerThreadMark&) = delete;

 private:
  int slot_ = -1;
};

bool is_profiler_thread(uint64_t tid);

// A thread of the profiler's: marked (never sampled; its memory from the own heap) and named
// before anything else runs on it, the process's signals blocked, and a stack sized to what the
// profiler's threads use (on Linux 256 KiB with a guard page, not the 8 MiB of RLIMIT_STACK).
class ProfilerThread {
 public:
  ProfilerThread() = default;
  ProfilerThread(ProfilerThread&& other) noexcept : handle_(other.handle_) { other.handle_ = 0; }
  ProfilerThread& operator=(ProfilerThread&& other) noexcept;
  ~ProfilerThread();  // joins a thread neither joined nor detached

  // False when the OS refuses a thread (the object stays empty).
  bool start(const char* name, std::function<void()> body);
  bool joinable() const { return handle_ != 0; }
  void join();
  void detach();
  // The thread's CPU time so far; none where the OS cannot tell (or the thread has ended).
  std::optional<uint64_t> cpu_ns() const;

 private:
  uintptr_t handle_ = 0;
};

// Whether the calling thread is one of the profiler's: set by its ProfilerThreadMark and kept
// until the thread ends (what its start-up allocated is freed after the mark's scope). Read by
// every allocation of libinprof.so (platform/linux/operator_new_linux.cc): no lock, no call.
bool on_profiler_thread();

}  // namespace inprof::internal

#endif  // INPROF_LIB_PROFILER_THREADS_H_
