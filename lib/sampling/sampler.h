// The sampling loop: every interval, for each thread of the process, take a snapshot of its stack
// (through a StackCopier), unwind the copy and write one sample record into the ring buffer. It
// also keeps the thread and module lists current, as metadata records.
//
// Where the copier offers self-sampling (self_sampling.h: Linux), a thread found on a CPU is
// given a timer of its own that interrupts it after each interval of its own CPU time; the
// sampler only collects its queued snapshots. Every other tick of every thread is taken without
// interrupting it: a repeat of its last stack while it has not run, or the copier's copy of it
// asleep in the kernel. So the program never sees a signal in a sleeping call. Where the copier
// stops threads by itself (Windows: SuspendThread), every thread is copied each tick.
//
// The sampler coordinates its parts, each behind a header of its own: the thread visitor
// (thread_visitor.h: which threads exist and which a tick visits), the self-sample collector
// (self_sample_collector.h: timers and kernel rings) and the sample encoder (sample_encoder.h:
// the records). What stays here is what joins them: the ticks and their timing, the copy of a
// thread at its check, crash samples, allocations, the module list and the statistics.
//
// Runs on its own thread. Nothing here runs while a target thread is stopped except inside the
// copier, so the sampler may allocate and take locks.
#ifndef INPROF_LIB_SAMPLER_H_
#define INPROF_LIB_SAMPLER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "allocations/allocation_pool.h"
#include "dump/dump_records.h"
#include "memory/large_alloc.h"
#include "sampling/module_lister.h"
#include "sampling/sample_encoder.h"
#include "sampling/sampler_config.h"
#include "sampling/self_sample_collector.h"
#include "sampling/stack_copier.h"
#include "sampling/thread_lister.h"
#include "sampling/thread_state.h"
#include "sampling/thread_visitor.h"
#include "sampling/tick_overhead.h"
#include "session/metadata_queue.h"
#include "session/ring_buffer.h"
#include "unwind/unwinder.h"

namespace inprof::internal {

struct SamplerStats {
  uint64_t samples_written = 0;
  uint64_t samples_dropped = 0;
  uint64_t threads_timed_out = 0;
  uint64_t ticks_late = 0;
  uint64_t samples_given_up = 0;
  uint64_t cpu_ns = 0;  // the sampler thread's own CPU time so far
  TickFigures ticks;    // what its ticks cost, one by one
  // Threads that ended before a copy put off (reread_pacer.h) read where they slept last.
  uint64_t sleep_stacks_unread = 0;
};

class Sampler final : private ThreadVisitor::Visits {
 public:
  Sampler(const SamplerConfig& config, std::unique_ptr<StackCopier> copier,
          std::unique_ptr<Unwinder> unwinder, std::unique_ptr<ThreadLister> threads,
          std::unique_ptr<ModuleLister> modules, RingBuffer& ring, MetadataQueue& metadata);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Sampled allocations wait here for the sampler to unwind them (allocation_pool.h). Call
  // before run(); the pool outlives the sampler.
  void set_allocation_pool(AllocationPool* pool);
  // Called at a tick that finds the ring more than a quarter full: the writer, which sleeps as
  // long as the ring's filling allows (Session::writer_loop), drains it now. Call before run().
  void set_ring_filling(std::function<void()> wake_drain) { ring_filling_ = std::move(wake_drain); }
  // Called once (sampler thread) when no thread of the program is left, only ours and an ended
  // main thread (main() called pthread_exit()). Before run().
  void set_program_ended(std::function<void()> ended) {
    visitor_.set_program_ended(std::move(ended));
  }
  // Unwinds and writes the allocations waiting in the pool; returns how many. Sampler thread.
  size_t drain_allocations();
  // Lists the modules now, on the sampler thread before run(): an allocation recorded before
  // the first tick is unwound with every module known (a rule looked up for code of no known
  // module is remembered as missing).
  void prepare_modules();

  // Threads never sampled: the profiler's own. Call before run().
  void exclude_thread(uint64_t tid) { visitor_.exclude(tid); }
  // Follows `starter` and the threads it creates from now on by the kernel's records of when
  // they run (thread_lister.h), where the OS keeps them: those found off every CPU since their
  // last check cost no system call. Sampler thread, before run(); false where not.
  bool watch_activity(uint64_t starter) { return visitor_.watch_activity(starter); }

  // Ticks every interval, without drift, until request_stop().
  void run();
  void request_stop();
  // After request_stop(): whether run() has returned (its last collection done) within
  // `timeout_ns`.
  bool wait_finished(uint64_t timeout_ns);

  // One round over every thread. Public for tests and benchmarks.
  void tick();
  // The time between ticks: the interval, or at least kSelfSamplingMinPeriodNs with
  // self-sampling (busy threads keep the interval by themselves).
  uint64_t period_ns() const;
  // The time to the next tick, after a tick: period_ns(), or as long as kCollectPeriodNs while
  // no thread needs the sampler sooner (self_sampling.h). Sampler thread.
  uint64_t next_tick_in_ns() const;
  // Threads currently self-sampled. For tests.
  size_t self_sampled_threads() const { return collector_.self_sampled(); }
  // Times a thread moved to self-sampling. Starting a timer may allocate (it is not a sampling
  // tick's steady state): tests that count allocations leave those ticks out.
  uint64_t self_sampling_starts() const { return collector_.starts(); }

  // While paused, ticks record nothing (Profiler::pause); threads are not interrupted.
  void set_paused(bool paused);

  // Waits for the tick in progress and keeps the next one from starting until release().
  void hold() { tick_mutex_.lock(); }
  void release() { tick_mutex_.unlock(); }

  SamplerStats stats() const;

  // Crash capture. A crash handler, on the crashing thread, fills crash_snapshot() with its
  // registers and the top of its stack, then posts it; the sampler unwinds it at its next tick like
  // any sample (with its own unwinder, which only the sampler thread may use), writes it to the
  // ring and marks it written. Call enable_crash_samples() before run().
  void enable_crash_samples();
  StackSnapshot* crash_snapshot() { return crash_stack_buffer_ ? &crash_snapshot_ : nullptr; }
  // Async-signal-safe.
  void post_crash_sample(uint64_t tid) {
    crash_tid_ = tid;
    crash_state_.store(kCrashPosted, std::memory_order_release);
  }
  bool crash_sample_written() const {
    return crash_state_.load(std::memory_order_acquire) == kCrashWritten;
  }

 private:
  // How a wait for the next tick ended.
  enum class WaitEnd { kDeadline, kQueuesFull, kStop };
  // Waits for the next tick at `deadline`. Ends early when a stop is requested, or when a queue
  // that fills by itself (a kernel ring) needs collecting: that tick is then taken at once.
  WaitEnd wait_until(uint64_t deadline);
  // Ends the sampler's wait for its next tick early. Any thread.
  void wake();
  void refresh_modules(uint64_t now);
  // A thread copied at its checks: a repeat while it did not run, else a copy (or a timer).
  void sample_thread(uint64_t tid, ThreadState& state, uint64_t now);
  // A repeat of a watched thread that the kernel's records say was off every CPU since its last
  // check; false if they do not.
  bool repeat_while_off_cpu(uint64_t tid, ThreadState& state, uint64_t now);
  // A watched thread switched on since its last check: a repeat of the stack it slept in, at
  // the time it woke.
  void write_wait_end(uint64_t tid, ThreadState& state, uint64_t until_ns = UINT64_MAX);
  // Writes the copy in snapshot_ as the thread's sample (or gives it a timer): `cpu` was read
  // before the copy, `cpu_delta` is what it ran since its last sample by that reading.
  void write_copy(uint64_t tid, ThreadState& state, uint64_t now, uint64_t cpu,
                  std::optional<uint64_t> cpu_delta);
  void note_timeout(ThreadState& state);
  // Whether a copy of a thread found asleep again after a short wake is taken now, charged to
  // the budget of reads again (reread_pacer.h), or put off.
  enum class CopyTurn { kNow, kPaced, kDeferred };
  CopyTurn copy_turn(ThreadState& state, uint64_t now, std::optional<uint64_t> cpu_delta);
  void end_deferral(ThreadState& state);
  // ThreadVisitor::Visits: what a tick does for one thread, its end, a listing.
  void visit(uint64_t tid, ThreadState& state, uint64_t now) override;
  void ending(uint64_t tid, ThreadState& state) override;
  void listing() override { drain_allocations(); }
  // At the session's end, a repeat for every thread known asleep since its last check: a sleep
  // long since its last repeat (watched threads back off to 1,024 intervals) is in the profile
  // to the end.
  void write_final_repeats(uint64_t now);
  // Every thread's repeat of where it sleeps, at `at` (the end, a pause).
  void write_sleep_repeats(uint64_t at);
  // A thread the kernel does not report on, copied at its checks, whose last sample is older
  // than an interval at `at` (a repeat then may say it slept on).
  bool unwatched_asleep_since_sample(const ThreadState& state, uint64_t at) const;
  // sampler_pause.cc: what the threads did up to a pause is written at the first tick after it;
  // at the first tick after a resume, what they did while paused is left out.
  void settle_before_pause(uint64_t paused_at_ns);
  void resume_after_pause(uint64_t now);
  void write_crash_sample();
  void write_allocation(const AllocationSlot& slot);
  uint64_t relative(uint64_t t) const { return config_.relative(t); }

  const SamplerConfig config_;
  std::unique_ptr<StackCopier> copier_;
  std::unique_ptr<ModuleLister> module_lister_;
  RingBuffer& ring_;
  MetadataQueue& metadata_;
  SampleEncoder encoder_;  // the sample, repeat, allocation and counter records
  // stop_requested_, read without the lock inside a tick: a stop (exit()) does not wait for a
  // tick's remaining threads, each of which the stop's tail accounts for (write_tail).
  std::atomic<bool> stopping_{false};
  // The threads: listed, named, selected, visited or parked.
  ThreadVisitor visitor_;
  bool crashed_ = false;  // a crash sample was posted when this tick's visits began

  struct KnownModule {
    uint64_t id;
    bool seen;
  };
  std::map<std::tuple<uint64_t, std::string, std::vector<uint8_t>>, KnownModule> modules_;
  std::vector<ModuleInfo> module_scratch_;
  uint64_t next_module_id_ = 1;

  // Pre-allocated per-sample scratch: the hot path does not allocate.
  LargeArray<uint8_t> stack_buffer_;  // large_alloc.h: a copy may be larger than malloc maps
  StackSnapshot snapshot_;
  uint64_t copies_deferred_now_ = 0;  // threads with copy_deferred set
  // Timers and kernel rings: the busy threads' snapshots (the copier's SelfSampling).
  SelfSampleCollector collector_;
  std::atomic<bool> paused_{false};
  std::atomic<uint64_t> paused_at_ns_{0};
  std::atomic<bool> settle_due_{false};  // a pause's settle_before_pause() has not run yet
  std::atomic<bool> resume_due_{false};  // a resume's resume_after_pause() has not run yet

  enum : int { kCrashIdle, kCrashPosted, kCrashWritten, kCrashFailed };
  AllocationPool* allocation_pool_ = nullptr;
  std::function<void()> ring_filling_;

  LargeArray<uint8_t> crash_stack_buffer_;
  StackSnapshot crash_snapshot_;
  uint64_t crash_tid_ = 0;
  std::atomic<int> crash_state_{kCrashIdle};

  std::atomic<uint64_t> threads_timed_out_{0};
  // Ticks that found a thread on a CPU that could not be sampled without disturbing it (it
  // blocks the signal, runs under seccomp, the program took the signal, no timer was free).
  std::atomic<uint64_t> samples_given_up_{0};
  std::atomic<uint64_t> ticks_late_{0};
  // Threads that ended before a deferred copy of where they slept last (reread_pacer.h).
  std::atomic<uint64_t> sleep_stacks_unread_{0};
  std::atomic<uint64_t> own_cpu_ns_{0};  // this thread's CPU time after its last tick
  TickOverhead tick_overhead_;

  std::mutex tick_mutex_;
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stop_requested_ = false;
  bool finished_ = false;  // run() has returned; under stop_mutex_
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_SAMPLER_H_
