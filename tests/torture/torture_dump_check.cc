// torture_dump_check DUMP [expectations]: reads a dump the way symbolicate would, prints what it
// holds on one line, and checks it is readable and consistent. Exit status 0 when every check
// passes, 1 otherwise.
//
//   --complete             the session stopped cleanly (end record; no damage at all)
//   --partial              the process died without stop(): the tail may be cut, nothing else
//   --min-samples N        samples + repeats at least N
//   --min-markers N
//   --expect-unload TEXT   a module whose path contains TEXT was unloaded at least once
//   --expect-samples-in TEXT  at least one sample's leaf lies in a module whose path contains TEXT
//   --expect-flag BIT      at least one sample carries this flag (FORMAT.md, "Sample flags")
//   --min-given-up N       samples the sampler gave up (threads that block the signal, or did not
//                          answer) at least N times
//   --sampled-or-given-up N   at least N threads have samples, or the sampler gave some up: threads
//                          that block every signal are read by a kernel ring when one is granted
//                          in time, else their samples are given up (which happens depends on
//                          when the sampler first sees them, so on the machine's load)
//   --allocations          every allocation was recorded (rate 1): an allocation stats record at
//                          rate 1; with --complete, the allocation and free records are what the
//                          counts say (each count minus at most the dropped ones) and, when none
//                          was dropped, every free frees a block allocated before it and not
//                          freed since
//   --min-allocations N    allocation records at least N
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "dump/dump_reader.h"

namespace {

using namespace inprof::internal;

struct Tally : DumpVisitor {
  bool process_seen = false;
  uint64_t samples = 0, repeats = 0, markers = 0, loads = 0, unloads = 0, thread_starts = 0;
  uint64_t unannounced = 0;  // samples of a thread without a start record before them
  uint64_t flag_counts[5] = {};
  StatsRecord stats;
  bool stats_seen = false;
  std::set<uint64_t> threads;
  std::set<uint64_t> sampled_threads;
  std::vector<ModuleRecord> modules;  // every module ever loaded (ranges may be reused)
  std::set<uint64_t> unloaded_ids;
  std::string unload_text, samples_in_text;
  uint64_t samples_in = 0;

  void on_process(const ProcessRecord&) override { process_seen = true; }
  void on_module_load(const ModuleRecord& m) override {
    ++loads;
    modules.push_back(m);
  }
  void on_module_unload(const ModuleUnloadRecord& u) override {
    ++unloads;
    unloaded_ids.insert(u.id);
  }
  void on_thread_start(const ThreadRecord& t) override {
    ++thread_starts;
    threads.insert(t.tid);
  }
  void on_sample(const SampleRecord& s) override {
    ++samples;
    sampled_threads.insert(s.tid);
    if (!threads.count(s.tid)) ++unannounced;
    for (int bit = 0; bit < 5; ++bit) {
      if (s.flags & (1u << bit)) ++flag_counts[bit];
    }
    if (!samples_in_text.empty() && !s.frames.empty()) {
      for (const ModuleRecord& m : modules) {
        if (s.frames[0] >= m.start && s.frames[0] < m.end &&
            m.path.find(samples_in_text) != std::string::npos) {
          ++samples_in;
          break;
        }
      }
    }
  }
  void on_sample_repeat(const SampleRepeatRecord& s) override {
    ++repeats;
    sampled_threads.insert(s.tid);
    if (!threads.count(s.tid)) ++unannounced;
  }
  void on_stats(const StatsRecord& s) override {
    stats = s;
    stats_seen = true;
  }
  void on_marker(const MarkerRecord&) override { ++markers; }
  // (time, 0 allocation / 1 free, address): at one time an allocation goes first.
  std::vector<std::tuple<uint64_t, int, uint64_t>> allocation_events;
  uint64_t allocations = 0, frees = 0;
  AllocationStatsRecord allocation_stats;
  bool allocation_stats_seen = false;
  void on_allocation(const AllocationRecord& a) override {
    ++allocations;
    allocation_events.emplace_back(a.time_ns, 0, a.address);
  }
  void on_free(const FreeRecord& f) override {
    ++frees;
    allocation_events.emplace_back(f.time_ns, 1, f.address);
  }
  void on_allocation_stats(const AllocationStatsRecord& s) override {
    allocation_stats = s;
    allocation_stats_seen = true;
  }
  // Frees of an address with no allocation live at it (in time order).
  uint64_t unmatched_frees() {
    std::sort(allocation_events.begin(), allocation_events.end());
    std::map<uint64_t, uint64_t> live;  // address -> blocks (an untracked free leaves two)
    uint64_t unmatched = 0;
    for (const auto& [time, kind, address] : allocation_events) {
      if (kind == 0) {
        ++live[address];
      } else if (auto it = live.find(address); it != live.end()) {
        if (--it->second == 0) live.erase(it);
      } else {
        ++unmatched;
      }
    }
    return unmatched;
  }

  uint64_t unloads_matching(const std::string& text) const {
    uint64_t n = 0;
    for (const ModuleRecord& m : modules) {
      if (unloaded_ids.count(m.id) && m.path.find(text) != std::string::npos) ++n;
    }
    return n;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: torture_dump_check DUMP [--complete|--partial] [--min-samples N] "
                 "[--min-markers N] [--expect-unload TEXT] [--expect-samples-in TEXT] "
                 "[--expect-flag BIT] [--allocations] [--min-allocations N]\n");
    return 2;
  }
  const std::string path = argv[1];
  bool want_complete = false, want_partial = false;
  uint64_t min_samples = 1, min_markers = 0, min_given_up = 0, min_allocations = 0;
  uint64_t min_sampled_or_given_up = 0;
  bool want_allocations = false;
  std::vector<std::string> unload_texts;
  std::vector<unsigned> flags;
  Tally tally;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "torture_dump_check: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--complete")
      want_complete = true;
    else if (a == "--partial")
      want_partial = true;
    else if (a == "--min-samples")
      min_samples = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--min-markers")
      min_markers = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--min-given-up")
      min_given_up = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--sampled-or-given-up")
      min_sampled_or_given_up = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--expect-unload")
      unload_texts.push_back(value());
    else if (a == "--expect-samples-in")
      tally.samples_in_text = value();
    else if (a == "--allocations")
      want_allocations = true;
    else if (a == "--min-allocations")
      min_allocations = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--expect-flag")
      flags.push_back(static_cast<unsigned>(std::atoi(value().c_str())));
    else {
      std::fprintf(stderr, "torture_dump_check: unknown option %s\n", a.c_str());
      return 2;
    }
  }

  const DumpReadResult r = read_dump_file(path, tally);
  std::vector<std::string> problems;
  if (!r.ok) problems.push_back("unreadable: " + r.error);
  if (!tally.process_seen) problems.push_back("no process record");
  if (want_complete) {
    if (!r.complete) problems.push_back("no end record: the session did not stop cleanly");
    for (const std::string& w : r.warnings) problems.push_back("damage: " + w);
    // Every sample the sampler counted must be in the file.
    if (tally.stats_seen && tally.stats.samples_recorded != tally.samples + tally.repeats) {
      problems.push_back("stats say " + std::to_string(tally.stats.samples_recorded) +
                         " samples recorded, the file holds " +
                         std::to_string(tally.samples + tally.repeats));
    }
  }
  if (want_partial && r.warnings.size() > 1) {
    for (const std::string& w : r.warnings) problems.push_back("damage beyond a cut tail: " + w);
  }
  if (tally.samples + tally.repeats < min_samples) {
    problems.push_back("only " + std::to_string(tally.samples + tally.repeats) + " samples, want " +
                       std::to_string(min_samples));
  }
  if (tally.markers < min_markers) {
    problems.push_back("only " + std::to_string(tally.markers) + " markers, want " +
                       std::to_string(min_markers));
  }
  const uint64_t given_up = tally.stats.threads_timed_out + tally.stats.samples_given_up;
  if (given_up < min_given_up) {
    problems.push_back("only " + std::to_string(given_up) + " samples given up, want " +
                       std::to_string(min_given_up));
  }
  if (tally.sampled_threads.size() < min_sampled_or_given_up && given_up == 0) {
    problems.push_back(std::to_string(tally.sampled_threads.size()) +
                       " threads sampled and none given up, want " +
                       std::to_string(min_sampled_or_given_up) + " sampled or some given up");
  }
  if (tally.unannounced) {
    problems.push_back(std::to_string(tally.unannounced) +
                       " samples of threads without a thread-start record before them");
  }
  for (const std::string& t : unload_texts) {
    if (tally.unloads_matching(t) == 0) problems.push_back("no unload of a module matching " + t);
  }
  if (!tally.samples_in_text.empty() && tally.samples_in == 0) {
    problems.push_back("no sample inside a module matching " + tally.samples_in_text);
  }
  if (want_allocations) {
    const AllocationStatsRecord& as = tally.allocation_stats;
    auto count = [](uint64_t n) { return std::to_string(n); };
    if (!tally.allocation_stats_seen) {
      problems.push_back("no allocation stats record");
    } else if (as.sample_bytes != 1) {
      problems.push_back("allocation rate " + count(as.sample_bytes) + ", not 1");
    } else if (want_complete) {
      if (tally.allocations > as.sampled || tally.allocations + as.dropped < as.sampled) {
        problems.push_back(count(as.sampled) + " allocations sampled, " + count(as.dropped) +
                           " records dropped, the file holds " + count(tally.allocations));
      }
      if (tally.frees > as.frees || tally.frees + as.dropped < as.frees) {
        problems.push_back(count(as.frees) + " frees of recorded blocks, " + count(as.dropped) +
                           " records dropped, the file holds " + count(tally.frees));
      }
      if (as.dropped == 0) {
        if (const uint64_t unmatched = tally.unmatched_frees(); unmatched != 0) {
          problems.push_back(count(unmatched) + " frees of blocks not allocated before them");
        }
      }
    }
  }
  if (tally.allocations < min_allocations) {
    problems.push_back("only " + std::to_string(tally.allocations) + " allocations, want " +
                       std::to_string(min_allocations));
  }
  for (unsigned bit : flags) {
    if (bit > 4 || tally.flag_counts[bit] == 0) {
      problems.push_back("no sample with flag bit " + std::to_string(bit));
    }
  }

  std::printf(
      "samples %llu (stacks %llu, repeats %llu), threads %zu, markers %llu, modules "
      "loaded %llu unloaded %llu, timed out %llu, given up %llu, dropped %llu, late ticks %llu, "
      "truncated %llu, depth-limited %llu, no-stack %llu, incomplete %llu, %s",
      (unsigned long long)(tally.samples + tally.repeats), (unsigned long long)tally.samples,
      (unsigned long long)tally.repeats, tally.threads.size(), (unsigned long long)tally.markers,
      (unsigned long long)tally.loads, (unsigned long long)tally.unloads,
      (unsigned long long)tally.stats.threads_timed_out,
      (unsigned long long)tally.stats.samples_given_up,
      (unsigned long long)tally.stats.samples_dropped, (unsigned long long)tally.stats.ticks_late,
      (unsigned long long)tally.flag_counts[0], (unsigned long long)tally.flag_counts[1],
      (unsigned long long)tally.flag_counts[2], (unsigned long long)tally.flag_counts[4],
      r.complete ? "complete" : "no end record");
  if (want_allocations) {
    std::printf(
        ", allocations %llu (sampled %llu, dropped %llu, untracked %llu), frees %llu",
        (unsigned long long)tally.allocations, (unsigned long long)tally.allocation_stats.sampled,
        (unsigned long long)tally.allocation_stats.dropped,
        (unsigned long long)tally.allocation_stats.untracked, (unsigned long long)tally.frees);
  }
  if (!tally.samples_in_text.empty()) {
    std::printf(", %llu in %s", (unsigned long long)tally.samples_in,
                tally.samples_in_text.c_str());
  }
  std::printf("\n");
  for (const std::string& w : r.warnings) std::printf("  reader: %s\n", w.c_str());
  for (const std::string& p : problems) std::printf("  PROBLEM: %s\n", p.c_str());
  return problems.empty() ? 0 : 1;
}
