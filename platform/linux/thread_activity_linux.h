// When the program's threads run, as the kernel records it: one perf "dummy" event per CPU that
// counts nothing and samples nothing, but writes a record into its ring at every context switch of
// a watched thread on that CPU, and at every thread creation, rename and end. Opened on one thread
// with `inherit` (threads only, not forked processes; removed at exec), it follows every thread
// that thread creates afterwards, and theirs: the 1,000 sleeping threads of a pool cost the sampler
// nothing until one of them is switched in. (The kernel refuses to map an inherited event that
// follows a thread on every CPU: hence one per CPU, as `perf record -- program` opens them.)
//
// Costs: per CPU, a ring of kDataPages pages charged to the user's perf_event_mlock_kb allowance
// (never to the program's RLIMIT_MEMLOCK: refused then), and no descriptor (closed once mapped).
// In the kernel, every watched thread carries one event per CPU (1,352 bytes each on 6.18: 2.6 MB
// for 1,000 threads on 2 CPUs, measured in /proc/slabinfo): beyond kMostCpus CPUs that would
// outweigh the thread's own kernel stack, and nothing is watched (the sampler asks each thread's
// clock, backing off while it sleeps).
// A record is 24 bytes (a switch), 40 (a rename) or 48 (a thread's start or end).
#ifndef INPROF_PLATFORM_LINUX_THREAD_ACTIVITY_LINUX_H_
#define INPROF_PLATFORM_LINUX_THREAD_ACTIVITY_LINUX_H_

#include <cstddef>
#include <cstdint>

#include "sampling/thread_lister.h"

namespace inprof::internal {

class ThreadActivityLinux {
 public:
  ThreadActivityLinux() = default;
  ~ThreadActivityLinux() { close(); }
  ThreadActivityLinux(const ThreadActivityLinux&) = delete;
  ThreadActivityLinux& operator=(const ThreadActivityLinux&) = delete;

  // Watches `starter` and the threads it creates from now on. False (nothing kept) where the
  // kernel refuses any CPU's event: a partial account would say threads sleep that run.
  bool open(uint64_t starter);
  void close();
  bool is_open() const { return cpus_ != 0; }
  void drain(void (*deliver)(void* context, const ThreadLister::Activity& activity), void* context);

 private:
  static constexpr uint32_t kDataPages = 16;  // 64 KiB: ~2,700 switches per CPU between ticks
  static constexpr int kMostCpus = 8;
  struct Ring {
    void* map = nullptr;
    uint8_t* data = nullptr;
    uint64_t data_size = 0;
  };
  void drain_ring(Ring& ring, void (*deliver)(void*, const ThreadLister::Activity&), void* context);

  Ring* rings_ = nullptr;  // cpus_ of them, in their own mapping (no malloc on this thread's path)
  size_t rings_bytes_ = 0;
  int cpus_ = 0;
  size_t map_bytes_ = 0;
  uint32_t own_pid_ = 0;  // as open() found it
};

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_THREAD_ACTIVITY_LINUX_H_
