// The sampler's per-thread sampling: a sleeping thread copied at its checks, a running one given a
// timer or kernel ring whose snapshots are collected at ticks, and taken back when it sleeps.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "markers/declarations.h"
#include "markers/label_stack.h"
#include "sampling/sampler.h"
#include "sampling/sampler_constants.h"
#include "sampling/thread_names.h"
#include "session/process_info.h"
#include "threads/profiler_threads.h"

namespace inprof::internal {

void Sampler::sample_thread(uint64_t tid, ThreadState& state, uint64_t now) {
  if (state.activity.watched && !state.activity.resync) {
    const bool ran = state.activity.on_cpu || state.activity.switched_on;
    state.activity.switched_on = false;
    if (!ran && state.has_stack && state.last_cpu_ns) {
      // Off every CPU since its last check, as the kernel's records say: its stack and CPU time
      // are what they were, known without asking its clock (most of what 1,000 sleeping
      // threads cost the sampler).
      state.ran_since_tick = false;
      encoder_.write_repeat(tid, state, now, uint64_t{0});
      state.idle_checks = std::min<uint32_t>(state.idle_checks + 1, kMostWatchedIdleBackoffShift);
      state.next_check_ns = now + (period_ns() << state.idle_checks) - period_ns() / 2;
      return;
    }
  }
  std::optional<uint64_t> cpu = thread_lister_->cpu_time_ns(tid);
  if (!cpu) return;  // gone; the next listing ends it
  state.observe_cpu(cpu, now);
  std::optional<uint64_t> cpu_delta;
  if (state.last_cpu_ns && *cpu >= *state.last_cpu_ns) cpu_delta = *cpu - *state.last_cpu_ns;
  state.ran_since_tick = !(state.has_stack && cpu_delta == 0u);
  if (state.activity.watched && cpu_delta == 0u) {
    // It has not run since its last check, so it is off every CPU, and from now on its records
    // say when it is switched on again (records were lost, or none came yet: a thread listed
    // before its records were read is on a CPU until one says not).
    state.activity.resync = false;
    state.activity.on_cpu = false;
    state.activity.switched_on = false;
  }
  if (!state.ran_since_tick) {
    // It has not run since its last sample, so its stack cannot have changed: no need to stop it.
    // The repeat stands for the whole time since the last sample (the wall-clock view weighs a
    // sleeping sample by it), so a thread asleep at its last checks is read again after 2, 4 ...
    // 16 intervals (reading every clock at every tick was most of what 1,000 sleeping threads
    // cost: 26 % of a CPU with the listing, benchmarks/idle_threads). 16
    // at most, the gap after which one sample no longer stands for all the CPU before it. (Half
    // an interval early: ticks are not exactly an interval apart.)
    encoder_.write_repeat(tid, state, now, cpu_delta);
    state.last_cpu_ns = cpu;
    state.idle_checks = std::min<uint32_t>(state.idle_checks + 1, kMostIdleBackoffShift);
    state.next_check_ns = now + (period_ns() << state.idle_checks) - period_ns() / 2;
    return;
  }
  state.idle_checks = 0;
  snapshot_.label_source = find_label_stack(tid);
  snapshot_.label_owner = tid;
  snapshot_.label_count = 0;
  const CopyResult copied = copier_->copy(tid, snapshot_);
  if (copied == CopyResult::kRunning) {
    // On a CPU: its own timer samples it from now on, if it may have one.
    // Not in the first milliseconds of a thread's life, when a sandboxed thread may still be
    // about to enter seccomp.
    if (self_sampling_ && state.arm_after_tick <= tick_count_ &&
        now - state.first_seen_ns >= kNewThreadGraceNs) {
      start_self_sampling(tid, state, now);
    }
    if (state.self_handle < 0) samples_given_up_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (copied == CopyResult::kTimedOut) {
    note_timeout(state);
    return;
  }
  if (copied != CopyResult::kOk) return;
  state.timeouts = 0;
  if (snapshot_.thread_cpu_ns != 0) {
    // Its CPU time when the copy was taken (the copier checked that it did not run meanwhile):
    // what it used up to then is this sample's, what it used after is the next one's. (Counting
    // from a later reading lost the CPU a runnable thread used while the sampler, descheduled,
    // was between the two: a quarter of a deep phase beside two busy loops.)
    cpu = std::max(snapshot_.thread_cpu_ns, *cpu);
    cpu_delta.reset();
    if (state.last_cpu_ns && *cpu >= *state.last_cpu_ns) cpu_delta = *cpu - *state.last_cpu_ns;
  } else if (auto after = thread_lister_->cpu_time_ns(tid)) {
    // A copier that reads no CPU time stops the thread: counted from after the copy, so that the
    // time it spent stopped is not its work.
    cpu = after;
  }
  state.last_sp = snapshot_.sp();
  const bool may_arm = self_sampling_ && state.arm_after_tick <= tick_count_ &&
                       now - state.first_seen_ns >= kNewThreadGraceNs;
  // Caught outside a system call, in the middle of its code: it gets a timer of its own like a
  // thread found on a CPU.
  if (snapshot_.runnable && may_arm) {
    state.last_cpu_ns = cpu;
    encoder_.write_sample(tid, state, snapshot_, cpu_delta, snapshot_.time_ns);
    start_self_sampling(tid, state, now);
    return;
  }
  // Asleep again after running between two ticks (a burst shorter than the tick): where it ran
  // is not in this stack, where it sleeps. It gets a timer or ring now, which costs nothing while
  // it sleeps; this sample carries no CPU, and the burst's goes with the first snapshot of its
  // own (where it runs then). Without one, the burst's CPU stays here, the only stack known.
  // Not at its first sample: what a thread ran before it is its start (1,000 threads that start
  // and then wait took every ring for a second, and a thread that runs in bursts got a timer).
  if (state.has_stack && cpu_delta && *cpu_delta > 0 && may_arm && !scarce_self_sampling() &&
      burst_arms_at_tick_ < kBurstArmsPerTick) {
    ++burst_arms_at_tick_;
    start_self_sampling(tid, state, now);
    if (state.self_handle >= 0) {
      encoder_.write_sample(tid, state, snapshot_, uint64_t{0}, snapshot_.time_ns);
      return;
    }
  }
  state.last_cpu_ns = cpu;
  encoder_.write_sample(tid, state, snapshot_, cpu_delta, snapshot_.time_ns);
}

bool Sampler::scarce_self_sampling() const {
  return self_sampling_refused_at_tick_ != 0 &&
         tick_count_ < self_sampling_refused_at_tick_ + kScarceForTicks;
}

void Sampler::note_timeout(ThreadState& state) {
  threads_timed_out_.fetch_add(1, std::memory_order_relaxed);
  state.timeouts = std::min<uint32_t>(state.timeouts + 1, 31);
  state.retry_at_tick =
      tick_count_ + std::min<uint64_t>(uint64_t(1) << state.timeouts, kMaxBackoffTicks);
}

std::optional<uint64_t> Sampler::runnable_ns(uint64_t tid, std::optional<uint64_t> cpu) {
  if (!cpu) cpu = thread_lister_->cpu_time_ns(tid);
  if (!cpu) return std::nullopt;
  return *cpu + thread_lister_->cpu_wait_ns(tid).value_or(0);
}

void Sampler::start_self_sampling(uint64_t tid, ThreadState& state, uint64_t now) {
  const int handle = self_sampling_->start(tid, state.last_sp, find_label_stack(tid));
  if (handle < 0) {
    if (self_sampling_->full()) self_sampling_refused_at_tick_ = tick_count_ + 1;
    // It blocks the signal, runs under seccomp, or every timer is taken: asked again later, less
    // and less often while the answer stays no.
    state.arm_refusals = std::min<uint32_t>(state.arm_refusals + 1, 10);
    state.arm_after_tick = tick_count_ + (uint64_t(1) << state.arm_refusals);
    return;
  }
  state.arm_refusals = 0;
  state.self_handle = handle;
  state.last_snapshot_cpu_ns.reset();
  state.self_counts = {};
  state.answered_at_tick = 0;
  state.drained_at_tick = state.drained;
  state.no_labels_before_ns = 0;
  state.last_answer_ns = now;
  state.cpu_when_silent.reset();
  state.probe_ns = now;
  state.probe_runnable_ns = runnable_ns(tid, std::nullopt);
  ++self_sampled_count_;
  ++self_sampling_starts_;
}

void Sampler::drain_self_samples(uint64_t tid, ThreadState& state) {
  if (state.self_handle < 0) return;
  // The handler copies the labels of the label stack it was given; a thread's label stack appears
  // with its first label, maybe after self-sampling began. Looked up before the queue is read: a
  // snapshot without labels taken before a lookup that found none is right; one taken after the
  // stack appeared may lack labels it had, and is not written.
  const uint64_t looked_up_ns = monotonic_ns();
  const LabelStack* labels = find_label_stack(tid);
  // No snapshot taken before this used more CPU. (The kernel's event counts its own clock, which
  // runs a little ahead of the thread's CPU clock when the thread is switched often; the deltas
  // must add up to the CPU it really used.) Snapshots taken after the lookup are left for the
  // next collection: the thread runs on while this one reads (a sampler preempted in this loop
  // beside busy threads read 40 more of a thread's 100 µs samples, every one held at this
  // reading, and the next carried their CPU past what one sample may weigh).
  const std::optional<uint64_t> cpu_now = thread_lister_->cpu_time_ns(tid);
  self_sampling_->set_labels(state.self_handle, labels);
  if (labels == nullptr) state.no_labels_before_ns = looked_up_ns;
  uint64_t moved_sp = 0;  // SP of a snapshot taken outside the stack mapping it was told of
  uint64_t unlabelled = 0;
  // A copy the kernel took holds the records of the thread's label scopes; it lacks only labels
  // pushed without one (the C API's), from the first of those on. (Read after the lookup: such a
  // label pushed later is pushed after every copy taken before the lookup.)
  const uint64_t off_stack_since_ns =
      labels ? labels->off_stack_since_ns.load(std::memory_order_relaxed) : 0;
  while (const StackSnapshot* snapshot = self_sampling_->front(state.self_handle)) {
    if (snapshot->time_ns >= looked_up_ns) break;  // the next collection's
    if (snapshot->labels_from_copy) {
      if (off_stack_since_ns != 0 && snapshot->time_ns >= off_stack_since_ns) {
        ++unlabelled;  // may lack a label it had; a timer takes the thread over
        self_sampling_->pop(state.self_handle);
        continue;
      }
    } else if (snapshot->label_source == nullptr &&
               snapshot->time_ns >= state.no_labels_before_ns) {
      if (labels == nullptr) break;  // taken after the lookup: the next collection decides
      ++unlabelled;
      self_sampling_->pop(state.self_handle);
      continue;
    }
    if (!snapshot->stack_region_known && !snapshot->stack_found &&
        self_sampling_->set_stack(state.self_handle, snapshot->sp())) {
      // Taken before its stack's mapping was known, where the kernel would not copy for us (an
      // emulator): registers only. The mapping is known now; this one is not written (counted
      // as a late tick). An SP in no mapping at all is written, as a sample without a stack.
      // Its SP is kept for the thread's next timer, whose first sample would be lost the same
      // way (an emulator reads no sleeping thread: a thread that runs in bursts lost them all).
      state.last_sp = snapshot->sp();
      ++unlabelled;
      self_sampling_->pop(state.self_handle);
      continue;
    }
    const std::optional<uint64_t> cpu_delta = snapshot_cpu_delta(state, *snapshot, cpu_now);
    if (!snapshot->stack_region_known) moved_sp = snapshot->sp();
    state.last_sp = snapshot->sp();
    ++state.drained;
    // Expirations merged into this one: the kernel checks CPU timers at its scheduler tick, so at
    // intervals below the tick one stack stands for several intervals of the thread's CPU. The
    // sample goes at the first, repeats at the others, the CPU time shared between them.
    const uint64_t merged = std::min(snapshot->expirations_merged, kMaxMergedExpirations);
    const uint64_t first_ns =
        std::max(snapshot->time_ns - std::min(snapshot->time_ns, merged * config_.interval_ns),
                 state.last_self_sample_ns);
    state.last_self_sample_ns = snapshot->time_ns;
    // CPU time unknown: each merged expiration is still one interval of the thread's CPU.
    std::optional<uint64_t> share;
    if (merged) share = config_.interval_ns;
    if (cpu_delta) share = *cpu_delta / (merged + 1);
    const UnwindOutput unwound = encoder_.write_sample(
        tid, state, *snapshot,
        cpu_delta ? std::optional<uint64_t>(*cpu_delta - merged * *share) : cpu_delta, first_ns,
        kSampleOnCpu);
    // How much of the copy the walk used: where the kernel copies, the copy's size follows it.
    const uint64_t outermost_sp = encoder_.outermost_sp(unwound);
    self_sampling_->note_walk(state.self_handle,
                              outermost_sp > snapshot->sp() ? outermost_sp - snapshot->sp() : 0,
                              unwound.result == UnwindResult::kTruncated);
    for (uint64_t i = 1; i <= merged && state.has_stack; ++i) {
      const uint64_t at = std::min(first_ns + i * config_.interval_ns, snapshot->time_ns);
      encoder_.write_repeat(tid, state, at, share);
    }
    self_sampling_->pop(state.self_handle);
  }
  const SelfSampling::Counts counts = self_sampling_->counts(state.self_handle);
  // Interruptions that left no sample are ticks this thread missed.
  ticks_late_.fetch_add(counts.missed - state.self_counts.missed + unlabelled,
                        std::memory_order_relaxed);
  if (counts.answered != state.self_counts.answered) state.cpu_when_silent.reset();
  state.self_counts = counts;
  // SP left the stack mapping it started on (a new mapping, or another stack): where it is now.
  if (moved_sp != 0) self_sampling_->set_stack(state.self_handle, moved_sp);
}

std::optional<uint64_t> Sampler::snapshot_cpu_delta(ThreadState& state,
                                                    const StackSnapshot& snapshot,
                                                    std::optional<uint64_t> cpu_now) {
  if (snapshot.thread_cpu_ns == 0) return std::nullopt;  // the copier could not tell
  const uint64_t thread_cpu = snapshot.thread_cpu_ns;
  // What it ran since its previous snapshot, by the snapshots' own clock; from the CPU time
  // already accounted for at its first, or where that clock started again (a ring reopened).
  std::optional<uint64_t> ran;
  if (state.last_snapshot_cpu_ns && thread_cpu >= *state.last_snapshot_cpu_ns) {
    ran = thread_cpu - *state.last_snapshot_cpu_ns;
  } else if (state.last_cpu_ns && thread_cpu >= *state.last_cpu_ns) {
    ran = thread_cpu - *state.last_cpu_ns;
  }
  state.last_snapshot_cpu_ns = thread_cpu;
  if (!ran || !state.last_cpu_ns) {
    state.last_cpu_ns = cpu_now ? std::min(thread_cpu, *cpu_now) : thread_cpu;
    return std::nullopt;
  }
  // Never more than its own clock has left unaccounted for at this collection: the samples'
  // CPU adds up to what the thread used. A ring's clock runs ahead of the thread's (it counts
  // time the scheduler does not charge the thread); held to the thread's clock sample by
  // sample, the difference is the last samples' before a collection, where the clock runs out,
  // never one sample's lump of it (a thread preempted often gained 1.6 ms between collections
  // at 100 µs, more than a sample may stand for).
  uint64_t delta = *ran;
  if (cpu_now)
    delta = std::min(delta, *cpu_now > *state.last_cpu_ns ? *cpu_now - *state.last_cpu_ns : 0);
  *state.last_cpu_ns += delta;
  return delta;
}

void Sampler::collect_self_samples(uint64_t tid, ThreadState& state, uint64_t now) {
  // Since the last tick (the sampler may have collected between ticks).
  const uint64_t answered_before = state.answered_at_tick;
  const uint64_t drained_before = state.drained_at_tick;
  drain_self_samples(tid, state);
  state.answered_at_tick = state.self_counts.answered;
  state.drained_at_tick = state.drained;
  if (state.self_handle < 0) return;
  const std::optional<uint64_t> cpu = thread_lister_->cpu_time_ns(tid);
  if (!cpu) return;  // gone; the next listing ends it
  state.ran_since_tick =
      state.drained != drained_before || !state.cpu_at_tick || *cpu != *state.cpu_at_tick;
  if (state.last_ran_ns == 0 || state.ran_since_tick) state.last_ran_ns = now;
  state.cpu_at_tick = cpu;
  state.observe_cpu(cpu, now);
  if (state.self_counts.answered != answered_before) {
    state.last_answer_ns = now;
    state.cpu_when_silent.reset();
  } else if (now - state.last_answer_ns >= config_.answer_timeout_ns) {
    // It ran for two intervals without an answer. The kernel checks its timer only at ticks that
    // find it on a CPU, so a thread that runs in short bursts may simply not have been caught;
    // one that blocks the signal now must lose its timer (and the signal pending in it). Its
    // status says which.
    if (!state.cpu_when_silent) {
      state.cpu_when_silent = cpu;
    } else if (*cpu - *state.cpu_when_silent >= 2 * config_.interval_ns &&
               self_sampling_->still_allowed(state.self_handle)) {
      state.last_answer_ns = now;
      state.cpu_when_silent.reset();
    } else if (*cpu - *state.cpu_when_silent >= 2 * config_.interval_ns) {
      self_sampling_->abandon(state.self_handle);
      state.self_handle = -1;
      --self_sampled_count_;
      threads_timed_out_.fetch_add(1, std::memory_order_relaxed);
      state.arm_refusals = std::min<uint32_t>(state.arm_refusals + 4, 10);
      state.arm_after_tick = tick_count_ + (uint64_t(1) << state.arm_refusals);
      return;
    }
  }
  // A tick without a sample from its timer: it did not run a whole interval since the last one.
  // The wall-clock view still gets its sample: the same stack if it has not run at all, else
  // where it sleeps now (if it sleeps: when it runs, its timer has it).
  if (state.drained == drained_before) {
    // Compared with the last tick, not the last snapshot: the CPU it ran since that snapshot is
    // still counting on its timer, but its stack changed only if it ran since the last tick
    // (else a sleeping thread with a timer was copied again at every tick).
    // On a CPU as the kernel's records say: a copy would only find it running.
    const bool on_cpu_now =
        state.activity.watched && !state.activity.resync && state.activity.on_cpu;
    if (state.has_stack && !state.ran_since_tick) {
      encoder_.write_repeat(tid, state, now, uint64_t{0});
    } else if (state.ran_since_tick && !on_cpu_now) {
      snapshot_.label_source = find_label_stack(tid);
      snapshot_.label_owner = tid;
      snapshot_.label_count = 0;
      // Kept only if no snapshot of its own arrived meanwhile (samples stay in time order). It
      // carries no CPU: what the thread ran since its last snapshot is less than an interval of
      // its clock, still counting on its timer or ring, and goes with the snapshot that ends it
      // (where it runs then), never to the stack it sleeps in now.
      if (copier_->copy(tid, snapshot_) == CopyResult::kOk &&
          self_sampling_->front(state.self_handle) == nullptr) {
        state.last_self_sample_ns = snapshot_.time_ns;
        // Marked as where it sleeps, with any CPU it or its repeats carry run where no sample
        // saw it (the tail written when it ends or its timer is given back, or this one's).
        // That CPU is written here once its snapshots have missed as much as one sample may
        // stand for: bursts that always end between two of the kernel's checks of its timer
        // (they start at the same point of the scheduler tick: 0.2 ms every 20 ms was never
        // seen) would else wait for a snapshot that never comes.
        const uint64_t unseen =
            state.last_cpu_ns && *cpu > *state.last_cpu_ns ? *cpu - *state.last_cpu_ns : 0;
        const bool settle = unseen >= kUnseenSettledAfterNs;
        if (settle) state.last_cpu_ns = cpu;
        encoder_.write_sample(tid, state, snapshot_, 0, snapshot_.time_ns, kSampleRanUnseen);
        if (settle) encoder_.write_cpu_repeats(tid, state, snapshot_.time_ns, unseen);
      }
    }
  }
  // Its timer is given back once it is runnable less than a quarter of a window (few threads
  // sleep for long with a timer that expires only as they run, but timers are few).
  const uint64_t window = std::max(4 * period_ns(), kSelfSamplingWindowNs);
  if (now - state.probe_ns < window) return;
  const std::optional<uint64_t> runnable = runnable_ns(tid, cpu);
  // The scheduler's wait time lags (it is counted when the thread gets a CPU): a thread that
  // waited for one the whole window must not lose its timer, so the OS is asked as well.
  const bool sleeping = runnable && state.probe_runnable_ns &&
                        *runnable >= *state.probe_runnable_ns &&
                        4 * (*runnable - *state.probe_runnable_ns) < now - state.probe_ns &&
                        thread_lister_->asleep(tid).value_or(true);
  state.probe_ns = now;
  state.probe_runnable_ns = runnable;
  if (sleeping && (scarce_self_sampling() || now - state.last_ran_ns >= kKeepWhileRanWithinNs)) {
    // What it ran since its last snapshot (under an interval: its clock never reached the next
    // one) is settled now, on its last stack, so that it is neither lost nor taken for a new
    // burst.
    encoder_.write_tail(tid, state);
    stop_self_sampling(state);
  } else if (!self_sampling_->still_allowed(state.self_handle)) {
    self_sampling_->abandon(state.self_handle);  // it blocks the signal now, or runs sandboxed
    state.self_handle = -1;
    --self_sampled_count_;
    state.arm_refusals = std::min<uint32_t>(state.arm_refusals + 4, 10);
    state.arm_after_tick = tick_count_ + (uint64_t(1) << state.arm_refusals);
  }
}

void Sampler::stop_self_sampling(ThreadState& state) {
  if (state.self_handle < 0) return;
  self_sampling_->stop(state.self_handle);
  state.self_handle = -1;
  --self_sampled_count_;
}

void Sampler::stop_all_self_sampling(bool collect_first) {
  if (self_sampled_count_ == 0) return;
  for (auto& [tid, state] : threads_) {
    if (collect_first && state.self_handle >= 0) {
      drain_self_samples(tid, state);
      state.observe_cpu(thread_lister_->cpu_time_ns(tid), monotonic_ns());
      encoder_.write_tail(tid, state);
    }
    stop_self_sampling(state);
  }
}

}  // namespace inprof::internal
