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
  // reading of the rest: 10 µs per thread between two checks keeps both well under 1 % of a CPU.
  next_check_ns_ = now + std::max<uint64_t>(kUnreadCpuCheckNs, threads.size() * 10000);
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
  std::map<uint64_t, uint64_t> before;
  before.swap(profiler_cpu_);
  for (const uint64_t tid : profiler_tids) {
    const std::optional<uint64_t> cpu = lister.cpu_time_ns(tid);
    if (!cpu) continue;
    const auto last = before.find(tid);
    const uint64_t from = last != before.end() ? last->second : 0;
    if (*cpu > from) tally_.read_ns += *cpu - from;
    profiler_cpu_[tid] = std::max(*cpu, from);
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
