// The profiler's threads on Linux: pthreads with a small stack. std::thread takes RLIMIT_STACK
// (8 MiB of address space each); the sampler and writer use well under 64 KiB (their buffers are
// mapped blocks, not locals).
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <cerrno>
#include <memory>

#include "session/process_info.h"
#include "threads/profiler_threads.h"

namespace inprof::internal {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(INPROF_ASAN) || defined(__SANITIZE_THREAD__) || \
    defined(INPROF_TSAN)
constexpr size_t kStackBytes = size_t{4} << 20;  // sanitizers' frames are several times larger
#else
constexpr size_t kStackBytes = size_t{256} << 10;
#endif

struct Start {
  const char* name;
  std::function<void()> body;
};

void* run(void* argument) {
  // Marked first: the sampler never samples it, and from here on its memory is the own heap's
  // (what the starting thread allocated, the Start itself, is freed as a foreign block).
  const ProfilerThreadMark never_sampled;
  std::unique_ptr<Start> start(static_cast<Start*>(argument));
  setup_profiler_thread(start->name);
  start->body();
  return nullptr;
}

}  // namespace

uintptr_t start_thread_of_profiler(const char* name, std::function<void()> body) {
  pthread_attr_t attributes;
  if (pthread_attr_init(&attributes) != 0) return 0;
  (void)pthread_attr_setstacksize(&attributes, kStackBytes);
  auto* start = new Start{name, std::move(body)};
  // Born with the process's signals blocked (setup_profiler_thread's mask), never a moment without.
  sigset_t blocked, previous;
  sigfillset(&blocked);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP}) sigdelset(&blocked, sig);
  pthread_sigmask(SIG_BLOCK, &blocked, &previous);
  pthread_t thread;
  const int error = pthread_create(&thread, &attributes, run, start);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  pthread_attr_destroy(&attributes);
  if (error != 0) {
    delete start;
    return 0;
  }
  return static_cast<uintptr_t>(thread);
}

void join_thread_of_profiler(uintptr_t handle) {
  (void)pthread_join(static_cast<pthread_t>(handle), nullptr);
}

void detach_thread_of_profiler(uintptr_t handle) {
  (void)pthread_detach(static_cast<pthread_t>(handle));
}

std::optional<uint64_t> cpu_ns_of_profiler_thread(uintptr_t handle) {
  clockid_t clock;
  timespec ts;
  const int saved_errno = errno;  // asked from the program's exiting thread
  const auto restore = [saved_errno] { errno = saved_errno; };
  if (pthread_getcpuclockid(static_cast<pthread_t>(handle), &clock) != 0 ||
      clock_gettime(clock, &ts) != 0) {
    restore();
    return std::nullopt;
  }
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace inprof::internal
