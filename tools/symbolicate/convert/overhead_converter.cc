#include "convert/overhead_converter.h"

namespace inprof::symbolicate {

std::optional<ProfilerOverhead> profiler_overhead(const ProfileModel& model, uint64_t pid,
                                                  ThreadIndex main_thread) {
  const std::vector<internal::StatsRecord>& history = model.stats_history();
  if (history.empty() || history.back().sampler_ticks == 0) return std::nullopt;
  // A whole session's dump counts from nothing; a part of one from its first figures.
  const bool part = model.capture().has_value();
  if (part && history.size() < 2) return std::nullopt;
  internal::StatsRecord base{};
  size_t first = 0;
  if (part) base = history[first++];
  ProfilerOverhead o;
  o.pid = pid;
  o.main_thread = main_thread;
  internal::StatsRecord previous = base;
  for (size_t i = first; i < history.size(); ++i) {
    const internal::StatsRecord& r = history[i];
    if (r.sampler_ticks <= previous.sampler_ticks || r.time_ns < previous.time_ns) continue;
    const uint64_t ticks = r.sampler_ticks - previous.sampler_ticks;
    const uint64_t cpu = r.sampler_cpu_ns >= previous.sampler_cpu_ns
                             ? r.sampler_cpu_ns - previous.sampler_cpu_ns
                             : 0;
    o.time_ns.push_back(r.time_ns);
    o.tick_cpu_us.push_back(double(cpu) / double(ticks) / 1e3);
    previous = r;
  }
  const internal::StatsRecord& last = history.back();
  if (o.size() == 0 || last.time_ns <= base.time_ns) return std::nullopt;
  o.duration_ns = last.time_ns - base.time_ns;
  o.ticks = last.sampler_ticks - base.sampler_ticks;
  o.sampler_cpu_ns = last.sampler_cpu_ns - std::min(base.sampler_cpu_ns, last.sampler_cpu_ns);
  o.profiler_cpu_ns = last.profiler_cpu_ns - std::min(base.profiler_cpu_ns, last.profiler_cpu_ns);
  // Least and most over the whole session: the records keep no per-period extremes.
  o.tick_cpu_min_ns = last.tick_cpu_min_ns;
  o.tick_cpu_max_ns = last.tick_cpu_max_ns;
  o.tick_interval_min_ns = last.tick_interval_min_ns;
  o.tick_interval_max_ns = last.tick_interval_max_ns;
  return o;
}

}  // namespace inprof::symbolicate
