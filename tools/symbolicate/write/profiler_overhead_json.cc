#include "write/profiler_overhead_json.h"

#include <string>

namespace inprof::symbolicate {
namespace {

double us(uint64_t ns) { return double(ns) / 1e3; }

void write_samples(Emitter& e, const ProfilerOverhead& o) {
  e.key("samples");
  e.begin_object();
  // Gecko's phases of a sampling loop; inprof's sampler takes no lock a program thread holds,
  // cleans no markers and reads its counters in the tick: all of a tick is "threads".
  for (const char* phase : {"counters", "expiredMarkerCleaning", "locking"}) {
    e.key(phase);
    e.array(o.size(), [&](size_t) { e.num(0); });
  }
  e.key("threads");
  e.array(o.size(), [&](size_t i) { e.num(o.tick_cpu_us[i]); });
  e.key("time");
  e.array(o.size(), [&](size_t i) { e.ms(o.time_ns[i]); });
  e.key("length");
  e.u64(o.size());
  e.end_object();
}

void write_stat(Emitter& e, const char* name, double mean, double min, double max) {
  const std::string n(name);
  e.key(("mean" + n).c_str());
  e.num(mean);
  e.key(("min" + n).c_str());
  e.num(min);
  e.key(("max" + n).c_str());
  e.num(max);
}

}  // namespace

void write_profiler_overhead(Emitter& e, const ProfilerOverhead& o) {
  e.begin_object();
  write_samples(e, o);
  // The viewer's units: durations in microseconds, the percentage as a fraction. Overhead and
  // Thread are the sampler's CPU per tick; the durations and percentage are the CPU of all the
  // profiler's threads (sampler and writer) over the time covered.
  e.key("statistics");
  e.begin_object();
  const double ticks = o.ticks > 0 ? double(o.ticks) : 1.0;
  e.key("profiledDuration");
  e.num(us(o.duration_ns));
  e.key("samplingCount");
  e.u64(o.ticks);
  e.key("overheadDurations");
  e.num(us(o.profiler_cpu_ns));
  e.key("overheadPercentage");
  e.num(o.duration_ns > 0 ? double(o.profiler_cpu_ns) / double(o.duration_ns) : 0.0);
  const double tick_cpu_mean = us(o.sampler_cpu_ns) / ticks;
  for (const char* name : {"Overhead", "Thread"}) {
    write_stat(e, name, tick_cpu_mean, us(o.tick_cpu_min_ns), us(o.tick_cpu_max_ns));
  }
  write_stat(e, "Interval", us(o.duration_ns) / ticks, us(o.tick_interval_min_ns),
             us(o.tick_interval_max_ns));
  for (const char* name : {"Lockings", "Cleaning", "Counter"}) write_stat(e, name, 0, 0, 0);
  e.end_object();
  e.key("pid");
  e.str(std::to_string(o.pid));
  e.key("mainThreadIndex");
  e.index(o.main_thread);
  e.end_object();
}

}  // namespace inprof::symbolicate
