// The threads of this process, as the OS sees them. Called from the sampler thread only, never
// while a thread is stopped (implementations may allocate and do I/O).
#ifndef INPROF_LIB_THREAD_LISTER_H_
#define INPROF_LIB_THREAD_LISTER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace inprof::internal {

class ThreadLister {
 public:
  static std::unique_ptr<ThreadLister> create();
  virtual ~ThreadLister() = default;

  // Every thread id of the process; false if the OS would not say.
  virtual bool list(std::vector<uint64_t>& tids) = 0;
  // How many threads the process has, where the OS says it for much less than a listing costs.
  virtual std::optional<uint64_t> thread_count() { return std::nullopt; }
  // CPU time the thread has consumed, or nothing if it is gone.
  virtual std::optional<uint64_t> cpu_time_ns(uint64_t tid) = 0;
  // CPU time the whole process has consumed (every thread, ended ones too), if the OS says.
  // Costs a walk over the threads (Linux: ~35 ns each): asked rarely.
  virtual std::optional<uint64_t> process_cpu_time_ns() { return std::nullopt; }
  // The OS's name for the thread ("comm" on Linux), empty if unknown.
  virtual std::string name(uint64_t tid) = 0;
  // Time the thread has spent ready to run but waiting for a CPU, if the OS says: tells a busy
  // thread on a crowded machine from a sleeping one, where CPU time alone cannot.
  virtual std::optional<uint64_t> cpu_wait_ns(uint64_t) { return std::nullopt; }
  // Whether the thread is asleep (blocked), rather than running or waiting for a CPU, if the OS
  // says.
  virtual std::optional<bool> asleep(uint64_t) { return std::nullopt; }
  // Whether the thread has ended but is still listed (Linux: the main thread after it called
  // pthread_exit(), a zombie until the process ends); nullopt where unknown.
  virtual std::optional<bool> ended(uint64_t) { return std::nullopt; }
  // The thread is gone: release anything kept for it.
  virtual void forget(uint64_t tid) = 0;

  // The kernel's own account of when threads run, where it keeps one (Linux: context-switch
  // records): a thread known to have been off every CPU since it was last looked at costs the
  // sampler nothing, not even a clock read. Watches `starter` and every thread it creates from
  // now on (and theirs). False where the OS cannot; the sampler then asks each thread's clock.
  virtual bool watch_activity(uint64_t /*starter*/) { return false; }
  struct Activity {
    enum class Kind : uint8_t {
      kOn,       // switched onto a CPU
      kOff,      // switched off one
      kCreated,  // a thread created by a watched one: watched from its start
      kEnded,
      kNamed,  // it named itself (or was named): `name`
      kLost,   // records were lost: any watched thread may have run since
    };
    Kind kind;
    uint64_t tid;                // 0 for kLost
    uint64_t time_ns;            // monotonic clock (kLost: the loss's end, or 0 if unknown)
    const char* name = nullptr;  // kNamed: valid during the call only
    uint64_t creator = 0;        // kCreated: the thread that created it (0: unknown)
  };
  // What happened since the last call, in each CPU's order (not across CPUs: compare times).
  virtual void drain_activity(void (*deliver)(void* context, const Activity& activity),
                              void* context) {
    (void)deliver;
    (void)context;
  }
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_THREAD_LISTER_H_
