// What a tick does for a thread copied at its checks (not self-sampled): a repeat while it has not
// run, else a copy of its stack; a thread found running is handed to the self-sample collector.
#include <algorithm>

#include "markers/label_stack.h"
#include "sampling/sampler.h"
#include "sampling/sampler_constants.h"
#include "session/process_info.h"

namespace inprof::internal {

void Sampler::visit(uint64_t tid, ThreadState& state, uint64_t now) {
  // The crashed thread is in its crash handler now: its crash sample is its last.
  if (!state.selected || (crashed_ && tid == crash_tid_)) {
    collector_.stop(state);
    return;
  }
  // Its end record came: it is leaving, or gone, and what it left is written when it is ended
  // (ending()). Its clock, while it still answers, tells what it used since its last sample. (A
  // copy would find nothing to take: 10,000 threads woken to end at once cost ~40 µs each.)
  if (state.activity.ended && state.self_handle < 0) {
    state.observe_cpu(visitor_.lister().cpu_time_ns(tid), now);
    return;
  }
  if (state.self_handle >= 0) {
    collector_.collect(tid, state, now);
    return;
  }
  if (state.retry_at_tick > visitor_.tick()) return;
  // Backing off while asleep, unless the kernel said it was switched on since.
  if (state.next_check_ns > now && !state.activity.switched_on) return;
  sample_thread(tid, state, now);
}

void Sampler::ending(uint64_t tid, ThreadState& state) {
  if (state.copy_deferred) {
    sleep_stacks_unread_.fetch_add(1, std::memory_order_relaxed);
    end_deferral(state);  // its tail goes above the stack it slept in before its last wake
  }
  write_wait_end(tid, state);
  collector_.drain(tid, state);  // taken before it exited
  encoder_.write_tail(tid, state);
  collector_.stop(state);
}

void Sampler::write_wait_end(uint64_t tid, ThreadState& state, uint64_t until_ns) {
  ThreadActivity& a = state.activity;
  const bool woke = a.watched && !a.resync && a.switched_on;
  const uint64_t at = a.first_on_ns;
  a.switched_on = false;
  // Its stack was the one it slept in until its records say it was switched on: a repeat then,
  // so that the wall-clock view (and the time it waited there) runs to the wake-up, not to the
  // last check of its back-off, up to a second earlier. Not within an interval of its last
  // record: a check that soon would have seen the same.
  // (Not while a copy of where it sleeps now is put off: since its wake, it slept elsewhere.)
  if (!woke || !state.has_stack || state.ran_since_tick || state.self_handle >= 0 ||
      state.copy_deferred || !state.last_cpu_ns || at <= state.last_record_ns + period_ns() ||
      at > std::min(monotonic_ns(), until_ns)) {
    return;
  }
  encoder_.write_repeat(tid, state, at, uint64_t{0});
}

bool Sampler::repeat_while_off_cpu(uint64_t tid, ThreadState& state, uint64_t now) {
  if (!state.activity.watched || state.activity.resync) return false;
  const bool ran = state.activity.on_cpu || state.activity.switched_on;
  write_wait_end(tid, state);
  if (ran || !state.has_stack || !state.last_cpu_ns || state.sleep_stack_due ||
      state.copy_deferred) {
    return false;
  }
  // Off every CPU since its last check, as the kernel's records say: its stack and CPU time
  // are what they were, known without asking its clock (most of what 1,000 sleeping
  // threads cost the sampler).
  state.ran_since_tick = false;
  encoder_.write_repeat(tid, state, now, uint64_t{0});
  // Its next check at the longest back-off at once: its records wake it for the tick after it
  // is switched on, so shorter ones only wrote repeats that say nothing new (a thread falling
  // asleep was visited 11 times in its first second: 10,000 threads starting at once, ~110,000
  // visits, half of what their start cost the sampler).
  state.idle_checks = kMostWatchedIdleBackoffShift;
  state.next_check_ns = now + (period_ns() << state.idle_checks) - period_ns() / 2;
  return true;
}

void Sampler::sample_thread(uint64_t tid, ThreadState& state, uint64_t now) {
  if (repeat_while_off_cpu(tid, state, now)) return;
  std::optional<uint64_t> cpu = visitor_.lister().cpu_time_ns(tid);
  if (!cpu) {
    visitor_.note_gone(state);  // a listing ends it, or its end record
    return;
  }
  // (Unchanged since the last reading: it did not run since its last check.)
  const bool idle_since_check = state.observed_cpu_ns == cpu;
  state.observe_cpu(cpu, now);
  std::optional<uint64_t> cpu_delta;
  if (state.last_cpu_ns && *cpu >= *state.last_cpu_ns) cpu_delta = *cpu - *state.last_cpu_ns;
  // (A stack its timer or ring took while it ran is not where it sleeps: copied once.)
  state.ran_since_tick =
      !(state.has_stack && cpu_delta == 0u && !state.sleep_stack_due && !state.copy_deferred);
  if (state.activity.watched && cpu_delta == 0u) {
    // It has not run since its last check, so it is off every CPU, and from now on its records
    // say when it is switched on again (records were lost, or none came yet: a thread listed
    // before its records were read is on a CPU until one says not). Nor did it rename itself.
    state.activity.resync = false;
    state.activity.on_cpu = false;
    state.activity.switched_on = false;
    state.activity.name_unsure = false;
  } else if (state.activity.watched && state.copy_deferred && idle_since_check) {
    // Its copy put off, it ran before its last check only: off every CPU, as above (and
    // parked again), but a rename while records were lost is still unsure.
    state.activity.resync = false;
    state.activity.on_cpu = false;
    state.activity.switched_on = false;
  } else if (state.activity.resync && !state.activity.name_unsure) {
    state.mark_name_unsure();  // it ran while its records were lost
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
    // Past that, without the kernel's records, while the process's CPU clock guards it
    // (dormant_threads.h): up to a second.
    const uint32_t most =
        visitor_.dormant_guarded() ? kMostDormantBackoffShift : kMostIdleBackoffShift;
    state.idle_checks = std::min<uint32_t>(state.idle_checks + 1, most);
    state.next_check_ns =
        now + std::min(period_ns() << state.idle_checks, visitor_.longest_dormant_check_ns()) -
        period_ns() / 2;
    return;
  }
  const CopyTurn turn = copy_turn(state, now, cpu_delta);
  if (turn == CopyTurn::kDeferred) return;
  end_deferral(state);
  state.idle_checks = 0;
  snapshot_.label_source = find_label_stack(tid);
  snapshot_.label_owner = tid;
  snapshot_.label_count = 0;
  snapshot_.cpu_read_before_ns = *cpu;
  const uint64_t copy_start_ns = turn == CopyTurn::kPaced ? monotonic_ns() : 0;
  const CopyResult copied = copier_->copy(tid, snapshot_);
  if (turn == CopyTurn::kPaced) visitor_.reread_pacer().charge(monotonic_ns() - copy_start_ns);
  snapshot_.cpu_read_before_ns = 0;
  if (copied == CopyResult::kRunning) {
    // On a CPU: its own timer samples it from now on, if it may have one.
    if (collector_.may_start(state, now)) collector_.start(tid, state, now);
    if (state.self_handle < 0) samples_given_up_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (copied == CopyResult::kTimedOut) {
    note_timeout(state);
    return;
  }
  if (copied == CopyResult::kFailed) state.sleep_stack_due = false;  // unreadable: not again
  if (copied != CopyResult::kOk) return;
  state.timeouts = 0;
  state.sleep_stack_due = false;
  write_copy(tid, state, now, *cpu, cpu_delta);
}

void Sampler::write_copy(uint64_t tid, ThreadState& state, uint64_t now, uint64_t cpu_before,
                         std::optional<uint64_t> cpu_delta) {
  std::optional<uint64_t> cpu = cpu_before;
  if (snapshot_.thread_cpu_ns != 0) {
    // Its CPU time when the copy was taken (the copier checked that it did not run meanwhile):
    // what it used up to then is this sample's, what it used after is the next one's. (Counting
    // from a later reading lost the CPU a runnable thread used while the sampler, descheduled,
    // was between the two: a quarter of a deep phase beside two busy loops.)
    cpu = std::max(snapshot_.thread_cpu_ns, *cpu);
    cpu_delta.reset();
    if (state.last_cpu_ns && *cpu >= *state.last_cpu_ns) cpu_delta = *cpu - *state.last_cpu_ns;
  } else if (auto after = visitor_.lister().cpu_time_ns(tid)) {
    // A copier that reads no CPU time stops the thread: counted from after the copy, so that the
    // time it spent stopped is not its work.
    cpu = after;
  }
  state.last_sp = snapshot_.sp();
  // Not in the first milliseconds of a thread's life, when a sandboxed thread may still be
  // about to enter seccomp.
  const bool may_arm = collector_.may_start(state, now);
  // Caught outside a system call, in the middle of its code: it gets a timer of its own like a
  // thread found on a CPU.
  if (snapshot_.runnable && may_arm) {
    state.last_cpu_ns = cpu;
    encoder_.write_sample(tid, state, snapshot_, cpu_delta, snapshot_.time_ns);
    collector_.start(tid, state, now);
    return;
  }
  // Asleep again after running between two ticks (a burst shorter than the tick): where it ran
  // is not in this stack, where it sleeps. It gets a timer or ring now, which costs nothing while
  // it sleeps; this sample carries no CPU, and the burst's goes with the first snapshot of its
  // own (where it runs then). Without one, the burst's CPU stays here, the only stack known.
  // Not at its first sample: what a thread ran before it is its start (1,000 threads that start
  // and then wait took every ring for a second, and a thread that runs in bursts got a timer).
  if (state.has_stack && cpu_delta && *cpu_delta > 0 && may_arm && collector_.take_burst_start()) {
    collector_.start(tid, state, now);
    if (state.self_handle >= 0) {
      encoder_.write_sample(tid, state, snapshot_, uint64_t{0}, snapshot_.time_ns);
      return;
    }
  }
  state.last_cpu_ns = cpu;
  encoder_.write_sample(tid, state, snapshot_, cpu_delta, snapshot_.time_ns);
}

Sampler::CopyTurn Sampler::copy_turn(ThreadState& state, uint64_t now,
                                     std::optional<uint64_t> cpu_delta) {
  // Only a copy again (the first is never put off), of a thread that ran at most an interval
  // since its last sample and that the kernel's records say is off every CPU now (after a loss,
  // by a record since). Without them only the copy tells whether it runs: one that does, its
  // CPU share cut by busy neighbours (17 threads on 2 CPUs), ran an interval's CPU over many,
  // and putting its copy off left that CPU unsampled for up to a second.
  if (!state.has_stack || !cpu_delta || *cpu_delta > period_ns()) return CopyTurn::kNow;
  const ThreadActivity& a = state.activity;
  if (!a.watched || a.on_cpu || (a.resync && !a.off_after_loss)) return CopyTurn::kNow;
  RereadPacer& pacer = visitor_.reread_pacer();
  if (pacer.may_read(now)) return CopyTurn::kPaced;
  if (!state.copy_deferred) {
    state.copy_deferred = true;
    ++copies_deferred_now_;
  }
  // Parked until then, unless its records say it was switched on again. Its last CPU reading
  // stays: what it ran since goes with the copy, or with its tail if it ends first.
  state.ran_since_tick = false;
  state.next_check_ns = now + pacer.retry_in_ns(copies_deferred_now_, period_ns());
  return CopyTurn::kDeferred;
}

void Sampler::end_deferral(ThreadState& state) {
  if (!state.copy_deferred) return;
  state.copy_deferred = false;
  --copies_deferred_now_;
}

void Sampler::note_timeout(ThreadState& state) {
  threads_timed_out_.fetch_add(1, std::memory_order_relaxed);
  state.timeouts = std::min<uint32_t>(state.timeouts + 1, 31);
  state.retry_at_tick =
      visitor_.tick() + std::min<uint64_t>(uint64_t(1) << state.timeouts, kMaxBackoffTicks);
}

}  // namespace inprof::internal
