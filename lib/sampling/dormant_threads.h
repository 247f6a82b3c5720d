// Threads that have slept a long time, where the kernel keeps no records of when threads run
// (perf events refused: kernel.perf_event_paranoid, a container's seccomp profile, another perf
// user holding the allowance). Without records the sampler asks each sleeping thread's CPU clock
// at its checks, and a check no further apart than 16 intervals kept a burst's CPU near its time:
// 10,000 sleeping threads were 625 clock reads per millisecond, a whole CPU (the ticks then came
// every 6 ms). Here a thread asleep past that back-off (dormant) is checked at most once a second,
// and the process's CPU clock stands guard: every kUnreadCpuCheckNs the CPU it counts is compared
// with what the readings of every thread not dormant (and of the profiler's own) accounted for.
// More unread CPU than the readings' lag explains means a dormant thread ran: a round then checks
// every dormant thread, a bounded number per tick. A dormant thread that ran less than that
// threshold is found at its own check, its CPU whole (written where it sleeps, under
// `[ran between samples]` past 16 intervals, as any thread's between two samples).
//
// Sampler thread only.
#ifndef INPROF_LIB_SAMPLING_DORMANT_THREADS_H_
#define INPROF_LIB_SAMPLING_DORMANT_THREADS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "sampling/thread_lister.h"
#include "sampling/thread_state.h"

namespace inprof::internal {

class DormantThreads {
 public:
  using Threads = std::map<uint64_t, ThreadState>;
  // Makes a parked thread due for a check at the next tick.
  using Wake = void (*)(void* context, uint64_t tid, ThreadState& state);

  explicit DormantThreads(uint64_t interval_ns);

  CpuTally& tally() { return tally_; }
  // Whether a sleeping thread may back off past kMostIdleBackoffShift: the process's CPU clock
  // answered at the last check.
  bool guarded() const { return guarded_; }
  static bool dormant(const ThreadState& state);

  // After a tick's visits, which began at `tick_start_ns` and ended at `now`. `profiler_tids`: the
  // profiler's own threads (their CPU is the process's too).
  void after_visits(uint64_t tick_start_ns, uint64_t now, Threads& threads, ThreadLister& lister,
                    const std::vector<uint64_t>& profiler_tids, Wake wake, void* context);

  struct Figures {
    uint64_t checks = 0;  // of the process's clock
    uint64_t rounds = 0;  // over the dormant threads
  };
  Figures figures() const { return figures_; }

 private:
  void continue_round(Threads& threads, Wake wake, void* context);
  // Reads every thread that is not dormant and was not read at this tick, and the profiler's.
  void read_the_rest(uint64_t tick_start_ns, uint64_t now, Threads& threads, ThreadLister& lister,
                     const std::vector<uint64_t>& profiler_tids);

  const uint64_t interval_ns_;
  CpuTally tally_;
  bool guarded_ = false;
  uint64_t next_check_ns_ = 0;
  // The least unread CPU since the last round (what ended threads left unread, and the CPU used
  // before the session, stay in it): more than this plus the threshold is a dormant thread's.
  std::optional<int64_t> baseline_;
  bool round_active_ = false;
  bool round_done_ = false;  // since the last check: the next one takes a new baseline
  uint64_t round_cursor_ = 0;
  // The profiler's threads, as last read.
  std::vector<std::pair<uint64_t, uint64_t>> profiler_cpu_;
  Figures figures_;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_SAMPLING_DORMANT_THREADS_H_
