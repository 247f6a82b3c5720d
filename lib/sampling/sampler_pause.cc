// Profiler::pause() and resume(): the samples stop at the pause and start again at the resume,
// with nothing of what the threads did in between, and nothing of what they did before it lost.
#include "sampling/sampler.h"

namespace inprof::internal {

void Sampler::settle_before_pause(uint64_t paused_at_ns) {
  if (!config_.cpu_samples) return;
  // Up to the pause, as at the session's end: the snapshots taken before it, each thread's tail,
  // and the sleeps since each thread's last check. (A thread that woke just before the pause
  // had its wake-up in records the paused ticks never wrote: main, asleep in join() since 400
  // ms, had no sample in the 90 ms before a pause it called as it woke.)
  if (visitor_.watching()) visitor_.drain_activity();
  collector_.stop_all(visitor_.threads(), /*collect_first=*/true, paused_at_ns);
  write_sleep_repeats(paused_at_ns);
}

void Sampler::resume_after_pause(uint64_t now) {
  // What each thread ran while paused is no sample's, and where it sleeps now is read again
  // (it may have moved): its clock counts from here, its records' wake-ups from the pause are
  // dropped, its first sample is a whole one (a repeat would say it sat in its stack from before
  // the pause all along), and every thread is visited at this tick.
  for (auto& [tid, state] : visitor_.threads()) {
    const std::optional<uint64_t> cpu = visitor_.lister().cpu_time_ns(tid);
    if (!cpu) continue;  // gone; the next listing ends it
    state.last_cpu_ns = cpu;
    state.cpu_at_tick = cpu;
    state.last_snapshot_cpu_ns.reset();
    state.observe_cpu(cpu, now);
    state.activity.switched_on = false;
    state.sleep_stack_due = true;
    state.has_stack = false;  // no repeat of a stack from before: it may have run since
    state.ran_since_tick = true;
    state.idle_checks = 0;
    state.next_check_ns = 0;
  }
  visitor_.wake_all();
}

}  // namespace inprof::internal
