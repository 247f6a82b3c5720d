// The profiler's own threads (writer, sampler, stopper, signal triggers), which it never samples.
// Each holds a ProfilerThreadMark, a local of its thread function, for as long as it runs; so a
// program thread given a recycled thread id is sampled as usual. (Not a thread_local with a
// destructor: MinGW runs those after the thread's TLS is gone.) Bounded: a thread beyond the bound
// is sampled.
#ifndef INPROF_LIB_PROFILER_THREADS_H_
#define INPROF_LIB_PROFILER_THREADS_H_

#include <cstdint>

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

}  // namespace inprof::internal

#endif  // INPROF_LIB_PROFILER_THREADS_H_
