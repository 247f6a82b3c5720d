#include "sampling/dormant_threads.h"

#include <algorithm>
#include <thread>

#include "sampling/sampler_constants.h"

namespace inprof::internal {

DormantThreads::DormantThreads(uint64_t interval_ns) : interval_ns_(interval_ns) {}

bool DormantThreads::dormant(const ThreadState& state) {
  return state.parked && state.selected && state.self_handle < 0 &&
         state.idle_checks > kMostIdleBackoffShift;
}

void DormantThreads::after_visits(uint64_t tick_start_ns, uint64_t now, Threads& threads,
                                  ThreadLister& lister, const std::vector<uint64_t>& profiler_tids,
                                  Wake wake, void* context) {
  if (round_active_) continue_round(threads, wake, context);
  if (now < next_check_ns_) return;
  // The process's clock walks every thread (~35 ns each, more when they are cold), as does the
  // reading of the rest: spaced by thread count, both stay well under 1 % of a CPU.
  next_check_ns_ =
      now + std::max<uint64_t>(kUnreadCpuCheckNs, threads.size() * kUnreadCpuCheckPerThreadNs);
  read_the_rest(tick_start_ns, now, threads, lister, profiler_tids);
  // Read last: what the readings above lag behind it is the CPU used since each of them, at
  // most every CPU's since this tick began (`now`: after its visits).
  const std::optional<uint64_t> process = lister.process_cpu_time_ns();
  guarded_ = process.has_value();
  if (!guarded_) return;
  ++figures_.checks;
  const int64_t unread = static_cast<int64_t>(*process - tally_.read_ns);
  if (!baseline_ || round_done_) {
    baseline_ = unread;
    round_done_ = false;
    return;
  }
  baseline_ = std::min(*baseline_, unread);
  const uint64_t cpus = std::max(1u, std::thread::hardware_concurrency());
  const uint64_t lag = cpus * (now - std::min(now, tick_start_ns)) + 2 * interval_ns_;
  if (!round_active_ && unread - *baseline_ > static_cast<int64_t>(lag + kUnreadCpuSlackNs)) {
    round_active_ = true;
    round_cursor_ = 0;
    ++figures_.rounds;
  }
}

void DormantThreads::read_the_rest(uint64_t tick_start_ns, uint64_t now, Threads& threads,
                                   ThreadLister& lister,
                                   const std::vector<uint64_t>& profiler_tids) {
  for (auto& [tid, state] : threads) {
    if (state.observed_ns >= tick_start_ns || dormant(state)) continue;
    state.observe_cpu(lister.cpu_time_ns(tid), now);
  }
  // In place, in a vector: a tick allocates nothing once the profiler's threads are known.
  std::erase_if(profiler_cpu_, [&](const std::pair<uint64_t, uint64_t>& entry) {
    return std::find(profiler_tids.begin(), profiler_tids.end(), entry.first) ==
           profiler_tids.end();
  });
  for (const uint64_t tid : profiler_tids) {
    const std::optional<uint64_t> cpu = lister.cpu_time_ns(tid);
    if (!cpu) continue;
    auto last = std::find_if(profiler_cpu_.begin(), profiler_cpu_.end(),
                             [&](const auto& entry) { return entry.first == tid; });
    if (last == profiler_cpu_.end()) last = profiler_cpu_.insert(last, {tid, 0});
    if (*cpu > last->second) {
      tally_.read_ns += *cpu - last->second;
      last->second = *cpu;
    }
  }
}

void DormantThreads::continue_round(Threads& threads, Wake wake, void* context) {
  uint32_t woken = 0;
  auto it = threads.lower_bound(round_cursor_);
  for (; it != threads.end() && woken < kDormantWakesPerTick; ++it) {
    if (!dormant(it->second)) continue;
    it->second.next_check_ns = 0;  // due at once
    wake(context, it->first, it->second);
    ++woken;
  }
  if (it == threads.end()) {
    round_active_ = false;
    round_done_ = true;
  } else {
    round_cursor_ = it->first;
  }
}

}  // namespace inprof::internal
