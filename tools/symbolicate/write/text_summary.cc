#include "write/text_summary.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "convert/sample_weight.h"
#include "write/stack_walk.h"

namespace inprof::symbolicate {
namespace {

struct Times {  // ns
  uint64_t self = 0;
  uint64_t total = 0;
};

void print_ranking(std::FILE* out, const char* title,
                   std::vector<std::pair<std::string, Times>> rows, bool by_self, size_t top,
                   uint64_t busy_ns) {
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    uint64_t x = by_self ? a.second.self : a.second.total,
             y = by_self ? b.second.self : b.second.total;
    return x != y ? x > y : a.first < b.first;
  });
  std::fprintf(out, "  %s\n  %10s %7s %10s %7s  %s\n", title, "self ms", "self%", "total ms",
               "total%", "function");
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const Times& c = rows[i].second;
    if ((by_self ? c.self : c.total) == 0) break;
    std::fprintf(out, "  %10.1f %6.1f%% %10.1f %6.1f%%  %s\n", double(c.self) / 1e6,
                 100.0 * double(c.self) / double(busy_ns), double(c.total) / 1e6,
                 100.0 * double(c.total) / double(busy_ns), rows[i].first.c_str());
  }
}

// The marks a stack's root may carry (profile_converter.cc): a sample that is not complete says
// why.
// kGap: CPU after a gap in the sampling, under [ran between samples] alone
// (ProfileModel::push_sample).
enum class Mark { kNone, kTruncated, kNoStack, kUnwindStopped, kGap };

Mark mark_of(const ProfileBuilder& profile, StackIndex stack) {
  const std::vector<FrameIndex> frames = frames_root_first(profile, stack);
  if (frames.empty()) return Mark::kNone;
  const std::string& root = frame_name(profile, frames.front());
  if (root == "[truncated stack]") return Mark::kTruncated;
  if (root == "[no stack]") return Mark::kNoStack;
  if (root == "[unwind stopped]") return Mark::kUnwindStopped;
  if (root == "[ran between samples]" && frames.size() == 1) return Mark::kGap;
  return Mark::kNone;
}

void print_value(std::FILE* out, const ExtraEntry& e) {
  if (const auto* s = std::get_if<std::string>(&e.value)) {
    std::fprintf(out, "%s: %s\n", e.label.c_str(), s->c_str());
  } else if (const auto* n = std::get_if<uint64_t>(&e.value)) {
    std::fprintf(out, "%s: %llu\n", e.label.c_str(), static_cast<unsigned long long>(*n));
  } else {
    std::fprintf(out, "%s: %s\n", e.label.c_str(), std::get<bool>(e.value) ? "yes" : "no");
  }
}

void print_bytes_ranking(std::FILE* out, const char* title,
                         std::vector<std::pair<std::string, Times>> rows, bool by_self, size_t top,
                         uint64_t all) {
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    uint64_t x = by_self ? a.second.self : a.second.total,
             y = by_self ? b.second.self : b.second.total;
    return x != y ? x > y : a.first < b.first;
  });
  std::fprintf(out, "  %s\n  %14s %7s %14s %7s  %s\n", title, "self bytes", "self%", "total bytes",
               "total%", "function");
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const Times& c = rows[i].second;
    if ((by_self ? c.self : c.total) == 0) break;
    std::fprintf(out, "  %14llu %6.1f%% %14llu %6.1f%%  %s\n",
                 static_cast<unsigned long long>(c.self), 100.0 * double(c.self) / double(all),
                 static_cast<unsigned long long>(c.total), 100.0 * double(c.total) / double(all),
                 rows[i].first.c_str());
  }
}

// Bytes per function over every thread's sampled allocations: all of them, and those never
// freed (the viewer's "Retained Memory": a free cancels the allocation at its address).
void print_allocation_sites(std::FILE* out, const ProfileBuilder& profile, size_t top) {
  std::map<uint32_t, uint64_t> allocated, retained;  // bytes by stack
  uint64_t allocated_all = 0, retained_all = 0;
  bool any = false;
  for (const Thread& t : profile.threads()) {
    const NativeAllocationTable& a = t.allocations;
    if (a.size() == 0) continue;
    any = true;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a.weight[i] <= 0) continue;
      if (a.stack[i]) allocated[raw(*a.stack[i])] += static_cast<uint64_t>(a.weight[i]);
      allocated_all += static_cast<uint64_t>(a.weight[i]);
    }
    for (size_t row : retained_allocation_rows(a)) {
      retained_all += static_cast<uint64_t>(a.weight[row]);
      if (a.stack[row]) retained[raw(*a.stack[row])] += static_cast<uint64_t>(a.weight[row]);
    }
  }
  if (!any) return;
  auto rank = [&](const std::map<uint32_t, uint64_t>& by_stack) {
    std::map<std::string, Times> bytes;
    for (const auto& [stack, n] : by_stack) {
      std::vector<FrameIndex> frames = frames_root_first(profile, static_cast<StackIndex>(stack));
      if (frames.empty()) continue;
      bytes[frame_name(profile, frames.back())].self += n;
      std::set<std::string> seen;
      for (FrameIndex f : frames) {
        const std::string& name = frame_name(profile, f);
        if (seen.insert(name).second) bytes[name].total += n;
      }
    }
    return std::vector<std::pair<std::string, Times>>(bytes.begin(), bytes.end());
  };
  std::fprintf(out, "Top allocation sites (estimated bytes, all threads): %llu bytes\n",
               static_cast<unsigned long long>(allocated_all));
  const auto allocation_rows = rank(allocated);
  print_bytes_ranking(out, "by allocating function:", allocation_rows, true, top,
                      std::max<uint64_t>(allocated_all, 1));
  print_bytes_ranking(out, "by total (anywhere on the stack):", allocation_rows, false, top,
                      std::max<uint64_t>(allocated_all, 1));
  std::fprintf(out, "\nTop retained sites (estimated bytes never freed): %llu bytes\n",
               static_cast<unsigned long long>(retained_all));
  const auto retained_rows = rank(retained);
  print_bytes_ranking(out, "by allocating function:", retained_rows, true, top,
                      std::max<uint64_t>(retained_all, 1));
  print_bytes_ranking(out, "by total (anywhere on the stack):", retained_rows, false, top,
                      std::max<uint64_t>(retained_all, 1));
  std::fprintf(out, "\n");
}

}  // namespace

// Blocked time by what was waited on and where (issue 43): an idle sample's leaf names its wait
// ("[blocked: futex g_mutex]"), the frames below it where the thread waited.
class WaitRanking {
 public:
  explicit WaitRanking(const ProfileBuilder& profile) : profile_(profile) {}

  void add(StackIndex stack, uint64_t ns) {
    auto [it, inserted] = keys_.try_emplace(raw(stack));
    if (inserted) it->second = key(stack);
    if (!it->second.empty()) ns_[it->second] += ns;
  }

  void print(std::FILE* out, size_t top) const {
    if (ns_.empty()) return;
    std::vector<std::pair<std::string, uint64_t>> rows(ns_.begin(), ns_.end());
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::fprintf(out, "Top waits (blocked time over every thread, by what and where):\n");
    std::fprintf(out, "  %10s  %s\n", "ms", "wait <- the program's code (innermost first)");
    for (size_t i = 0; i < rows.size() && i < top; ++i) {
      std::fprintf(out, "  %10.1f  %s\n", double(rows[i].second) / 1e6, rows[i].first.c_str());
    }
    std::fprintf(out, "\n");
  }

 private:
  static constexpr size_t kWhereFrames = 2;
  // The wait, then where the program waited (past the runtimes' frames) and its caller.
  std::string key(StackIndex stack) const {
    const std::vector<FrameIndex> frames = frames_root_first(profile_, stack);
    if (frames.empty()) return {};
    std::string out = frame_name(profile_, frames.back());
    if (!out.starts_with("[blocked")) return {};  // not waiting: a thread that did not run
    const std::optional<size_t> where = program_frame_below_leaf(profile_, frames);
    for (size_t i = where.value_or(0) + 1, shown = 0; i-- > 0 && where && shown < kWhereFrames;
         ++shown) {
      out += " <- " + frame_name(profile_, frames[i]);
    }
    return out;
  }
  const ProfileBuilder& profile_;
  std::unordered_map<uint32_t, std::string> keys_;
  std::map<std::string, uint64_t> ns_;
};

bool write_text_summary(const ProfileBuilder& profile, size_t top, std::FILE* out) {
  // What was recorded and what was lost (the dump's counters, as Profile Info shows them).
  for (const ExtraEntry& e : profile.meta().extra) {
    if (e.label.starts_with("Sampl") || e.label.starts_with("On-CPU") ||
        e.label.starts_with("Alloc") || e.label.starts_with("Frees")) {
      print_value(out, e);
    }
  }
  std::fprintf(out, "\n");
  WaitRanking waits(profile);
  for (const Thread& t : profile.threads()) {
    uint64_t idle = 0, busy = 0, no_stack = 0, idle_ns = 0, busy_ns = 0;
    uint64_t marks[5] = {};
    uint64_t gap_ns = 0;
    std::unordered_map<uint32_t, Mark> mark_cache;
    std::map<uint32_t, uint64_t> by_stack;  // ns of CPU
    SampleWeigher weigher(profile.meta(), t);
    t.samples.for_each([&](const SampleTable::Sample& s) {
      const bool is_idle = s.stack && is_idle_leaf(profile, *s.stack);
      const uint64_t weight = weigher.weight_ns(s, is_idle);
      if (!s.stack) {
        ++no_stack;
        return;
      }
      auto [it, inserted] = mark_cache.try_emplace(raw(*s.stack), Mark::kNone);
      if (inserted) it->second = mark_of(profile, *s.stack);
      ++marks[static_cast<int>(it->second)];
      if (is_idle) {
        ++idle;
        idle_ns += weight;
        waits.add(*s.stack, weight);
      } else {
        if (it->second == Mark::kGap) gap_ns += weight;
        by_stack[raw(*s.stack)] += weight;
        ++busy;
        busy_ns += weight;
      }
    });
    std::fprintf(out, "Thread \"%s\" (tid %llu): %zu samples, %llu on CPU, %llu idle",
                 t.name.c_str(), static_cast<unsigned long long>(t.tid), t.samples.size(),
                 static_cast<unsigned long long>(busy), static_cast<unsigned long long>(idle));
    if (no_stack)
      std::fprintf(out, ", %llu without a stack", static_cast<unsigned long long>(no_stack));
    std::fprintf(out, "; %.1f ms on CPU, %.1f ms idle\n", double(busy_ns) / 1e6,
                 double(idle_ns) / 1e6);
    std::fprintf(out,
                 "  samples marked: %llu truncated, %llu without a stack, %llu unwind stopped; "
                 "%llu on CPU weighted one interval (CPU time unknown); %.1f ms of CPU after "
                 "gaps of more than %llu intervals under [ran between samples] (%llu samples), "
                 "%.1f ms not represented\n",
                 static_cast<unsigned long long>(marks[int(Mark::kTruncated)]),
                 static_cast<unsigned long long>(marks[int(Mark::kNoStack)]),
                 static_cast<unsigned long long>(marks[int(Mark::kUnwindStopped)]),
                 static_cast<unsigned long long>(weigher.cpu_unknown()), double(gap_ns) / 1e6,
                 static_cast<unsigned long long>(SampleWeigher::kMaxIntervals),
                 static_cast<unsigned long long>(marks[int(Mark::kGap)]),
                 double(weigher.unrepresented_ns()) / 1e6);
    if (busy_ns == 0) {
      std::fprintf(out, "\n");
      continue;
    }
    std::map<std::string, Times> times;
    for (const auto& [stack, ns] : by_stack) {
      std::vector<FrameIndex> frames = frames_root_first(profile, static_cast<StackIndex>(stack));
      if (frames.empty()) continue;
      times[frame_name(profile, frames.back())].self += ns;
      std::set<std::string> seen;  // recursion counts once per sample
      for (FrameIndex f : frames) {
        const std::string& name = frame_name(profile, f);
        if (seen.insert(name).second) times[name].total += ns;
      }
    }
    std::vector<std::pair<std::string, Times>> rows(times.begin(), times.end());
    print_ranking(out, "by self time (CPU):", rows, true, top, busy_ns);
    print_ranking(out, "by total time (CPU):", rows, false, top, busy_ns);
    std::fprintf(out, "\n");
  }
  waits.print(out, top);
  print_allocation_sites(out, profile, top);
  return !std::ferror(out);
}

}  // namespace inprof::symbolicate
