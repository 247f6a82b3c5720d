#include "sampling/self_sample_collector.h"

#include <algorithm>

#include "markers/declarations.h"
#include "markers/label_stack.h"
#include "sampling/sampler_constants.h"
#include "session/process_info.h"

namespace inprof::internal {

SelfSampleCollector::SelfSampleCollector(const SamplerConfig& config, SelfSampling* backend,
                                         StackCopier& copier, ThreadLister& lister,
                                         SampleEncoder& encoder, StackSnapshot& scratch)
    : config_(config),
      backend_(backend),
      capabilities_(backend ? backend->capabilities() : SelfSampling::Capabilities{}),
      copier_(copier),
      lister_(lister),
      encoder_(encoder),
      scratch_(scratch) {}

uint64_t SelfSampleCollector::period_ns() const {
  return backend_ ? std::max(config_.interval_ns, kSelfSamplingMinPeriodNs) : config_.interval_ns;
}

uint64_t SelfSampleCollector::tick_in_ns(uint64_t period, const std::vector<uint64_t>& awake,
                                         const std::map<uint64_t, ThreadState>& threads) const {
  // Every thread is either sampled into a queue that holds a collect period of its snapshots
  // (the kernel's ring, which wakes the sampler when it fills; a timer's), or did not run since
  // its last sample (its next one is a repeat, weighed by the time since its last); sampled
  // allocations wake it when half their pool is taken. Nothing needs a tick before
  // kCollectPeriodNs; one that starts to run is copied at the next tick, its sample weighed by the
  // CPU it used (at most 12 intervals, see kSettledCollectPeriodNs), and the ticks return to the
  // interval.
  bool settled = true;
  // A ring still finding its size is read at every interval while its thread runs (a walk cut
  // short grows it at once). While the thread sleeps there is nothing to read: a process that
  // waits (a compiler driver for its cc1, a shell for its children) never collects the samples
  // that would settle its ring, and ticked at the full rate for its whole life. Its ticks wait at
  // most kSettledMaxIntervals intervals, so a thread that wakes deeper loses as few samples to a
  // ring too small as a settled one does.
  bool idle_unsettled = false;
  // Parked threads have neither a timer nor a ring, and did not run at their last check.
  for (const uint64_t tid : awake) {
    const auto it = threads.find(tid);
    if (it == threads.end()) continue;
    const ThreadState& state = it->second;
    if (!state.selected) continue;
    if (state.self_handle < 0) {
      if (state.ran_since_tick) return period;
      continue;
    }
    const SelfSampling::CollectPeriod held = backend_->collect_period(state.self_handle);
    if (held == SelfSampling::CollectPeriod::kEveryTick) {
      if (state.ran_since_tick) return period;
      idle_unsettled = true;
    }
    settled = settled && held == SelfSampling::CollectPeriod::kSettledPeriod;
  }
  // Every ring has kept its size for long (kSettledCollectPeriodNs): fewer wake-ups still.
  uint64_t relaxed = settled ? std::max(kCollectPeriodNs, std::min(kSettledCollectPeriodNs,
                                                                   kSettledMaxIntervals * period))
                             : kCollectPeriodNs;
  if (idle_unsettled) relaxed = std::min(relaxed, kSettledMaxIntervals * period);
  return std::max(period, relaxed / period * period);
}

bool SelfSampleCollector::may_start(const ThreadState& state, uint64_t now) const {
  return backend_ && state.arm_after_tick <= tick_ &&
         now - state.first_seen_ns >= kNewThreadGraceNs;
}

bool SelfSampleCollector::scarce() const {
  return refused_at_tick_ != 0 && tick_ < refused_at_tick_ + kScarceForTicks;
}

bool SelfSampleCollector::take_burst_start() {
  // While timers are scarce, only once one is free again (sleeping threads give theirs back).
  if ((scarce() && backend_->full()) || burst_starts_ >= kBurstArmsPerTick) return false;
  ++burst_starts_;
  return true;
}

std::optional<uint64_t> SelfSampleCollector::runnable_ns(uint64_t tid,
                                                         std::optional<uint64_t> cpu) {
  if (!cpu) cpu = lister_.cpu_time_ns(tid);
  if (!cpu) return std::nullopt;
  return *cpu + lister_.cpu_wait_ns(tid).value_or(0);
}

void SelfSampleCollector::start(uint64_t tid, ThreadState& state, uint64_t now) {
  const int handle = backend_->start(tid, state.last_sp, find_label_stack(tid));
  if (handle < 0) {
    // It blocks the signal, runs under seccomp, or every timer is taken: asked again later, less
    // and less often while the answer stays no. Refused for want of room, it is asked again soon
    // (threads that sleep give theirs back while timers are scarce): a thread that runs in bursts
    // refused at 1,000 threads' start waited a second for its next try, and its CPU went unseen.
    // Not yet known to take the signal (caught waking from sigwait, say): asked again within
    // a few ticks, not after the long back-off of a thread that blocks it.
    const bool full = backend_->full();
    if (full) refused_at_tick_ = tick_ + 1;
    const uint32_t most = handle == SelfSampling::kAskAgainSoon ? kMostUnsureRefusalShift
                          : full                                ? kMostFullRefusalShift
                                                                : 10;
    state.arm_refusals = std::min<uint32_t>(state.arm_refusals + 1, most);
    state.arm_after_tick = tick_ + (uint64_t(1) << state.arm_refusals);
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
  ++count_;
  ++starts_;
}

void SelfSampleCollector::drain(uint64_t tid, ThreadState& state, uint64_t before_ns) {
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
  const std::optional<uint64_t> cpu_now = lister_.cpu_time_ns(tid);
  backend_->set_labels(state.self_handle, labels);
  if (labels == nullptr) state.no_labels_before_ns = looked_up_ns;
  uint64_t moved_sp = 0;  // SP of a snapshot taken outside the stack mapping it was told of
  uint64_t unlabelled = 0;
  // A copy the kernel took holds the records of the thread's label scopes; it lacks only labels
  // pushed without one (the C API's), from the first of those on. (Read after the lookup: such a
  // label pushed later is pushed after every copy taken before the lookup.)
  const uint64_t off_stack_since_ns =
      labels ? labels->off_stack_since_ns.load(std::memory_order_relaxed) : 0;
  while (const StackSnapshot* snapshot = backend_->front(state.self_handle)) {
    if (snapshot->time_ns >= std::min(looked_up_ns, before_ns)) break;  // the next collection's
    if (snapshot->labels_from_copy) {
      if (off_stack_since_ns != 0 && snapshot->time_ns >= off_stack_since_ns) {
        ++unlabelled;  // may lack a label it had; a timer takes the thread over
        backend_->pop(state.self_handle);
        continue;
      }
    } else if (snapshot->label_source == nullptr &&
               snapshot->time_ns >= state.no_labels_before_ns) {
      if (labels == nullptr) break;  // taken after the lookup: the next collection decides
      ++unlabelled;
      backend_->pop(state.self_handle);
      continue;
    }
    if (!snapshot->stack_region_known && !snapshot->stack_found &&
        backend_->set_stack(state.self_handle, snapshot->sp())) {
      // Taken before its stack's mapping was known, where the kernel would not copy for us (an
      // emulator): registers only. The mapping is known now; this one is not written (counted
      // as a late tick). An SP in no mapping at all is written, as a sample without a stack.
      // Its SP is kept for the thread's next timer, whose first sample would be lost the same
      // way (an emulator reads no sleeping thread: a thread that runs in bursts lost them all).
      state.last_sp = snapshot->sp();
      ++unlabelled;
      backend_->pop(state.self_handle);
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
    state.sleep_stack_due = true;
    const UnwindOutput unwound = encoder_.write_sample(
        tid, state, *snapshot,
        cpu_delta ? std::optional<uint64_t>(*cpu_delta - merged * *share) : cpu_delta, first_ns,
        kSampleOnCpu);
    // How much of the copy the walk used: where the kernel copies, the copy's size follows it.
    const uint64_t outermost_sp = encoder_.outermost_sp(unwound);
    backend_->note_walk(state.self_handle,
                        outermost_sp > snapshot->sp() ? outermost_sp - snapshot->sp() : 0,
                        unwound.result == UnwindResult::kTruncated);
    for (uint64_t i = 1; i <= merged && state.has_stack; ++i) {
      const uint64_t at = std::min(first_ns + i * config_.interval_ns, snapshot->time_ns);
      encoder_.write_repeat(tid, state, at, share);
    }
    backend_->pop(state.self_handle);
  }
  const SelfSampling::Counts counts = backend_->counts(state.self_handle);
  // Interruptions that left no sample are ticks this thread missed.
  ticks_late_.fetch_add(counts.missed - state.self_counts.missed + unlabelled,
                        std::memory_order_relaxed);
  if (counts.answered != state.self_counts.answered) state.cpu_when_silent.reset();
  state.self_counts = counts;
  // SP left the stack mapping it started on (a new mapping, or another stack): where it is now.
  if (moved_sp != 0) backend_->set_stack(state.self_handle, moved_sp);
}

std::optional<uint64_t> SelfSampleCollector::snapshot_cpu_delta(ThreadState& state,
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

namespace {

// Off every CPU as the kernel's records say, and not switched on since its last check.
bool asleep_by_records(const ThreadActivity& a) {
  return a.watched && !a.resync && !a.on_cpu && !a.switched_on;
}

}  // namespace

bool SelfSampleCollector::collect_while_off_cpu(uint64_t tid, ThreadState& state, uint64_t now) {
  // A thread keeps its ring for a second after it last ran; collected in full at every tick, 100
  // such threads asleep cost the sampler two clock reads and a record each per tick. Its last
  // collection drained what the ring took before the thread was switched off, and nothing ran
  // since: neither its ring nor its clock has anything new.
  if (!state.off_cpu_at_collect || !asleep_by_records(state.activity) || !state.has_stack ||
      state.sleep_stack_due) {
    return false;
  }
  // Ticks stay at the interval a while after it last ran: off a CPU may be preempted, and a ring
  // still finding its size must be read at every interval once it runs again (a deep stack's
  // walks were cut short for longer beside two busy loops).
  state.ran_since_tick = now - state.last_ran_ns < kSelfSamplingWindowNs;
  if (scarce() || now - state.last_ran_ns >= kKeepWhileRanWithinNs) {
    encoder_.write_tail(tid, state);
    stop(state);
    return true;
  }
  // The wall-clock view: repeats backing off as a parked thread's; its wake-up gets its own.
  if (now >= state.next_check_ns) {
    encoder_.write_repeat(tid, state, now, uint64_t{0});
    state.idle_checks = std::min<uint32_t>(state.idle_checks + 1, kMostWatchedIdleBackoffShift);
    state.next_check_ns = now + (period_ns() << state.idle_checks) - period_ns() / 2;
  }
  return true;
}

void SelfSampleCollector::write_wake_up(uint64_t tid, ThreadState& state) {
  const ThreadActivity& a = state.activity;
  const bool woke = state.off_cpu_at_collect && a.watched && !a.resync && a.switched_on;
  state.off_cpu_at_collect = false;
  state.idle_checks = 0;
  state.next_check_ns = 0;
  if (!woke || !state.has_stack || a.first_on_ns <= state.last_record_ns + period_ns() ||
      a.first_on_ns > monotonic_ns()) {
    return;
  }
  encoder_.write_repeat(tid, state, a.first_on_ns, uint64_t{0});
}

void SelfSampleCollector::collect(uint64_t tid, ThreadState& state, uint64_t now) {
  if (collect_while_off_cpu(tid, state, now)) return;
  write_wake_up(tid, state);
  // Since the last tick (the sampler may have collected between ticks).
  const uint64_t answered_before = state.answered_at_tick;
  const uint64_t drained_before = state.drained_at_tick;
  drain(tid, state);
  state.answered_at_tick = state.self_counts.answered;
  state.drained_at_tick = state.drained;
  if (state.self_handle < 0) return;
  const std::optional<uint64_t> cpu = lister_.cpu_time_ns(tid);
  if (!cpu) return;  // gone; the next listing ends it
  // It ran at least half the time since its last tick: on a CPU now, most likely.
  const bool ran_most = state.cpu_at_tick && state.observed_ns != 0 && now > state.observed_ns &&
                        2 * (*cpu - std::min(*cpu, *state.cpu_at_tick)) >= now - state.observed_ns;
  state.ran_since_tick =
      state.drained != drained_before || !state.cpu_at_tick || *cpu != *state.cpu_at_tick;
  if (state.last_ran_ns == 0 || state.ran_since_tick) state.last_ran_ns = now;
  state.cpu_at_tick = cpu;
  state.observe_cpu(cpu, now);
  if (state.self_counts.answered != answered_before) {
    state.last_answer_ns = now;
    state.cpu_when_silent.reset();
  } else if (now - state.last_answer_ns >= config_.answer_timeout_ns &&
             drop_if_silent(state, now, *cpu)) {
    return;
  }
  // A tick without a sample from its timer: it did not run a whole interval since the last one.
  // The wall-clock view still gets its sample: the same stack if it has not run at all, else
  // where it sleeps now (if it sleeps: when it runs, its timer has it).
  if (state.drained == drained_before) sample_without_snapshot(tid, state, now, *cpu, ran_most);
  probe_business(tid, state, now, *cpu);
  // Off every CPU now, by its records: from the next tick, a switch onto one is what says it ran.
  ThreadActivity& a = state.activity;
  if (state.self_handle >= 0 && a.watched && !a.resync && !a.on_cpu) {
    a.switched_on = false;
    state.off_cpu_at_collect = true;
  }
}

bool SelfSampleCollector::drop_if_silent(ThreadState& state, uint64_t now, uint64_t cpu) {
  // It ran for two intervals without an answer. The kernel checks its timer only at ticks that
  // find it on a CPU, so a thread that runs in short bursts may simply not have been caught;
  // one that blocks the signal now must lose its timer (and the signal pending in it). Its
  // status says which.
  if (!state.cpu_when_silent) {
    state.cpu_when_silent = cpu;
  } else if (cpu - *state.cpu_when_silent >= 2 * config_.interval_ns &&
             backend_->still_allowed(state.self_handle)) {
    state.last_answer_ns = now;
    state.cpu_when_silent.reset();
  } else if (cpu - *state.cpu_when_silent >= 2 * config_.interval_ns) {
    abandon(state);
    timed_out_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  return false;
}

void SelfSampleCollector::sample_without_snapshot(uint64_t tid, ThreadState& state, uint64_t now,
                                                  uint64_t cpu, bool ran_most) {
  // Compared with the last tick, not the last snapshot: the CPU it ran since that snapshot is
  // still counting on its timer, but its stack changed only if it ran since the last tick
  // (else a sleeping thread with a timer was copied again at every tick).
  // On a CPU as the kernel's records say: a copy would only find it running.
  const bool on_cpu_now = state.activity.watched && !state.activity.resync && state.activity.on_cpu;
  // Its last stack came from its timer or ring while it ran, and it has not run since the last
  // tick: it went to sleep after that snapshot, somewhere else (when the tick after its burst
  // drained that snapshot, the stack it ran in was repeated while it slept, for up to the second
  // it keeps its ring: seen as a sleep of main's a second short in truth_waits beside two busy
  // loops, 2 runs in 60). Nor is it known if it has none: found running at its first checks and
  // given a timer, a thread that slept before the timer took a snapshot had no sample until it
  // gave the timer back, a second on (truth_waits beside two busy loops, 1 run in 20).
  const bool stack_known = state.has_stack && !state.sleep_stack_due;
  if (state.has_stack && !state.ran_since_tick && stack_known) {
    encoder_.write_repeat(tid, state, now, uint64_t{0});
    return;
  }
  // Nor where it ran most of the time since the last tick: it is on a CPU, most likely, and if
  // it has just gone to sleep the next tick copies it. (A timer expires only at the scheduler's
  // ticks, 4 ms apart here: a busy thread had three ticks in four without a snapshot, each
  // asking /proc to find it running, a quarter of what the sampler spent on it.)
  if ((!state.ran_since_tick && stack_known) || on_cpu_now || ran_most) return;
  scratch_.label_source = find_label_stack(tid);
  scratch_.label_owner = tid;
  scratch_.label_count = 0;
  // Kept only if no snapshot of its own arrived meanwhile (samples stay in time order). It
  // carries no CPU: what the thread ran since its last snapshot is less than an interval of
  // its clock, still counting on its timer or ring, and goes with the snapshot that ends it
  // (where it runs then), never to the stack it sleeps in now.
  const CopyResult copied = copier_.copy(tid, scratch_);
  // A stack that cannot be read (an emulator reads no sleeping thread) is not asked for again:
  // its last one is repeated, as before it ran.
  if (copied == CopyResult::kFailed) state.sleep_stack_due = false;
  if (copied != CopyResult::kOk || backend_->front(state.self_handle) != nullptr) return;
  state.last_self_sample_ns = scratch_.time_ns;
  state.sleep_stack_due = false;
  // Marked as where it sleeps, with any CPU it or its repeats carry run where no sample
  // saw it (the tail written when it ends or its timer is given back, or this one's).
  // That CPU is written here once its snapshots have missed as much as one sample may
  // stand for: bursts that always end between two of the kernel's checks of its timer
  // (they start at the same point of the scheduler tick: 0.2 ms every 20 ms was never
  // seen) would else wait for a snapshot that never comes.
  const uint64_t unseen =
      state.last_cpu_ns && cpu > *state.last_cpu_ns ? cpu - *state.last_cpu_ns : 0;
  const bool settle = unseen >= kUnseenSettledAfterNs;
  if (settle) state.last_cpu_ns = cpu;
  encoder_.write_sample(tid, state, scratch_, 0, scratch_.time_ns, kSampleRanUnseen);
  if (settle) encoder_.write_cpu_repeats(tid, state, scratch_.time_ns, unseen);
}

void SelfSampleCollector::probe_business(uint64_t tid, ThreadState& state, uint64_t now,
                                         uint64_t cpu) {
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
                        lister_.asleep(tid).value_or(true);
  state.probe_ns = now;
  state.probe_runnable_ns = runnable;
  if (sleeping && (scarce() || now - state.last_ran_ns >= kKeepWhileRanWithinNs)) {
    // What it ran since its last snapshot (under an interval: its clock never reached the next
    // one) is settled now, on its last stack, so that it is neither lost nor taken for a new
    // burst.
    encoder_.write_tail(tid, state);
    stop(state);
  } else if (!backend_->still_allowed(state.self_handle)) {
    abandon(state);  // it blocks the signal now, or runs sandboxed
  }
}

void SelfSampleCollector::abandon(ThreadState& state) {
  backend_->abandon(state.self_handle);
  state.self_handle = -1;
  state.off_cpu_at_collect = false;
  --count_;
  state.arm_refusals = std::min<uint32_t>(state.arm_refusals + 4, 10);
  state.arm_after_tick = tick_ + (uint64_t(1) << state.arm_refusals);
}

void SelfSampleCollector::stop(ThreadState& state) {
  if (state.self_handle < 0) return;
  backend_->stop(state.self_handle);
  state.self_handle = -1;
  state.off_cpu_at_collect = false;
  --count_;
}

void SelfSampleCollector::stop_all(std::map<uint64_t, ThreadState>& threads, bool collect_first,
                                   uint64_t until_ns) {
  if (count_ == 0) return;
  for (auto& [tid, state] : threads) {
    if (collect_first && state.self_handle >= 0) {
      drain(tid, state, until_ns);
      std::optional<uint64_t> cpu = lister_.cpu_time_ns(tid);
      // Up to a pause, read a little after it: no more than the time from its last sample to the
      // pause (what it ran while paused is no sample's).
      if (until_ns != UINT64_MAX && cpu && state.last_cpu_ns && *cpu > *state.last_cpu_ns) {
        const uint64_t most = until_ns - std::min(until_ns, state.last_record_ns);
        cpu = std::min(*cpu, *state.last_cpu_ns + most);
      }
      state.observe_cpu(cpu, std::min(monotonic_ns(), until_ns));
      encoder_.write_tail(tid, state);
    }
    stop(state);
  }
}

void SelfSampleCollector::give_up_if_taken(std::map<uint64_t, ThreadState>& threads) {
  if (backend_ == nullptr || backend_->usable()) return;
  // Running threads are no longer sampled (counted); sleeping ones still are.
  stop_all(threads, /*collect_first=*/true);
  backend_ = nullptr;
}

}  // namespace inprof::internal
