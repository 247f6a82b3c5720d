// The collector of self-sampled snapshots: a thread found running is given a timer or kernel ring
// of its own (SelfSampling, the platform's backend), whose snapshots are drained here at ticks and
// each given its share of the thread's CPU; the thread is taken back when it sleeps, stops
// answering, or the program takes the signal over. Apart from the sampler because this is the
// part the backends shape: the sampler asks only whether a running thread may have a timer, and
// how long its next tick may wait; what a backend's queues hold and how they wake stays here.
//
// Sampler thread only. Draining and collecting allocate nothing and take no lock (the backend's
// queues are lock-free); starting a thread's timer or ring may (not a tick's steady state:
// Sampler::self_sampling_starts()).
#ifndef INPROF_LIB_SAMPLING_SELF_SAMPLE_COLLECTOR_H_
#define INPROF_LIB_SAMPLING_SELF_SAMPLE_COLLECTOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "sampling/sample_encoder.h"
#include "sampling/sampler_config.h"
#include "sampling/self_sampling.h"
#include "sampling/stack_copier.h"
#include "sampling/thread_lister.h"
#include "sampling/thread_state.h"

namespace inprof::internal {

class SelfSampleCollector {
 public:
  // `backend` may be null (no self-sampling); `scratch` is the sampler's copy buffer, used for
  // the copy of a self-sampled thread found asleep.
  SelfSampleCollector(const SamplerConfig& config, SelfSampling* backend, StackCopier& copier,
                      ThreadLister& lister, SampleEncoder& encoder, StackSnapshot& scratch);
  SelfSampleCollector(const SelfSampleCollector&) = delete;
  SelfSampleCollector& operator=(const SelfSampleCollector&) = delete;

  // Whether running threads sample themselves (false without a backend, or once the program
  // took the backend's signal over).
  bool active() const { return backend_ != nullptr; }
  // The time between ticks: the interval, or at least kSelfSamplingMinPeriodNs while active
  // (busy threads keep the interval by themselves).
  uint64_t period_ns() const;
  // Whether the sampler may sleep in wait() to its next tick and be woken early.
  bool waits() const { return backend_ != nullptr && capabilities_.wait_wakes; }
  // SelfSampling::wait(); only where waits().
  bool wait(uint64_t timeout_ns) { return backend_->wait(timeout_ns); }
  // The time to the next tick as the self-sampled threads allow: `period`, or as long as
  // kCollectPeriodNs (kSettledCollectPeriodNs) while every awake thread's snapshots can wait in
  // a ring that wakes the sampler, or it did not run since its last sample.
  uint64_t tick_in_ns(uint64_t period, const std::vector<uint64_t>& awake,
                      const std::map<uint64_t, ThreadState>& threads) const;

  // A sampling tick begins (its threads are visited next): `tick` is its number.
  void begin_tick(uint64_t tick) {
    tick_ = tick;
    burst_starts_ = 0;
  }
  // Whether the thread may be given a timer now (not while refused lately, nor in the first
  // milliseconds of its life, when a sandboxed thread may still be about to enter seccomp).
  bool may_start(const ThreadState& state, uint64_t now) const;
  // One of the few starts a tick gives threads found asleep after a burst, if timers are not
  // scarce and this tick has one left (each costs system calls).
  bool take_burst_start();
  // Gives a thread found on a CPU a timer of its own, if it may have one.
  void start(uint64_t tid, ThreadState& state, uint64_t now);
  // Writes a self-sampled thread's queued snapshots; returns it to per-tick copies when it
  // sleeps, or when it does not answer.
  void collect(uint64_t tid, ThreadState& state, uint64_t now);
  // Writes its queued snapshots (those taken before now).
  // Snapshots taken at `before_ns` or later are left queued (a pause's: discarded by stop()).
  void drain(uint64_t tid, ThreadState& state, uint64_t before_ns = UINT64_MAX);
  void stop(ThreadState& state);
  // Stops every thread's timer; with `collect_first`, what they queued is written first, and the
  // CPU they ran since (write_tail).
  // `collect_first`: what each thread ran up to `until_ns` is written first.
  void stop_all(std::map<uint64_t, ThreadState>& threads, bool collect_first,
                uint64_t until_ns = UINT64_MAX);
  // Where the program installed its own handler for the sampling signal, the signal is the
  // program's now: every timer is stopped (what they queued kept) and the collector is inactive.
  void give_up_if_taken(std::map<uint64_t, ThreadState>& threads);

  size_t self_sampled() const { return count_; }
  uint64_t starts() const { return starts_; }
  // Interruptions that left no sample written (ticks the threads missed).
  uint64_t ticks_late() const { return ticks_late_.load(); }
  // Threads whose handler stopped answering.
  uint64_t timed_out() const { return timed_out_.load(); }

 private:
  // While every timer is taken, a thread that mostly sleeps gives its own back.
  bool scarce() const;
  // Time the thread spent running or waiting for a CPU; its CPU time where the OS does not say.
  // `cpu`: its CPU time if just read.
  std::optional<uint64_t> runnable_ns(uint64_t tid, std::optional<uint64_t> cpu);
  // The CPU a timer or ring snapshot stands for, kept within what the thread's own clock read
  // (`cpu_now`, at this collection) has left unaccounted for; advances state.last_cpu_ns.
  std::optional<uint64_t> snapshot_cpu_delta(ThreadState& state, const StackSnapshot& snapshot,
                                             std::optional<uint64_t> cpu_now);
  // A collection of a thread off every CPU since its last one, as the kernel's records say:
  // nothing to drain or read. False where the full collection is needed.
  bool collect_while_off_cpu(uint64_t tid, ThreadState& state, uint64_t now);
  // Woken since a collection that found it off every CPU: its sleeping stack was its stack until
  // then (the wall-clock view's repeat at the wake-up, before what its ring took).
  void write_wake_up(uint64_t tid, ThreadState& state);
  // Whether the thread lost its timer for not answering (the caller is done with it then).
  bool drop_if_silent(ThreadState& state, uint64_t now, uint64_t cpu);
  // A tick without a snapshot of its own: the wall-clock view's sample, from its last stack or
  // a copy of it asleep.
  // `ran_most`: it ran at least half the time since its last tick.
  void sample_without_snapshot(uint64_t tid, ThreadState& state, uint64_t now, uint64_t cpu,
                               bool ran_most);
  // Once a window: gives the timer back if the thread mostly sleeps, or may not keep it.
  void probe_business(uint64_t tid, ThreadState& state, uint64_t now, uint64_t cpu);
  // Stops at once a timer whose thread does not answer or may not be interrupted any more (see
  // SelfSampling::abandon()); it is asked again later, and less often.
  void abandon(ThreadState& state);

  const SamplerConfig& config_;
  SelfSampling* backend_;
  SelfSampling::Capabilities capabilities_;
  StackCopier& copier_;
  ThreadLister& lister_;
  SampleEncoder& encoder_;
  StackSnapshot& scratch_;

  uint64_t tick_ = 0;
  size_t count_ = 0;  // threads self-sampled now
  // The last tick at which a running thread could not get a timer or ring: while they are
  // scarce, one that mostly sleeps gives its own back.
  uint64_t refused_at_tick_ = 0;
  uint32_t burst_starts_ = 0;
  uint64_t starts_ = 0;
  std::atomic<uint64_t> ticks_late_{0};
  std::atomic<uint64_t> timed_out_{0};
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_SAMPLING_SELF_SAMPLE_COLLECTOR_H_
