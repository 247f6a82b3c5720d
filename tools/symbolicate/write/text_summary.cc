#include "write/text_summary.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "write/stack_walk.h"

namespace inprof::symbolicate {
namespace {

struct Counts {
  uint64_t self = 0;
  uint64_t total = 0;
};

void print_ranking(std::FILE* out, const char* title,
                   std::vector<std::pair<std::string, Counts>> rows, bool by_self, size_t top,
                   uint64_t busy) {
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    uint64_t x = by_self ? a.second.self : a.second.total,
             y = by_self ? b.second.self : b.second.total;
    return x != y ? x > y : a.first < b.first;
  });
  std::fprintf(out, "  %s\n  %10s %7s %10s %7s  %s\n", title, "self", "self%", "total", "total%",
               "function");
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const Counts& c = rows[i].second;
    if ((by_self ? c.self : c.total) == 0) break;
    std::fprintf(out, "  %10llu %6.1f%% %10llu %6.1f%%  %s\n",
                 static_cast<unsigned long long>(c.self), 100.0 * double(c.self) / double(busy),
                 static_cast<unsigned long long>(c.total), 100.0 * double(c.total) / double(busy),
                 rows[i].first.c_str());
  }
}

}  // namespace

bool write_text_summary(const ProfileBuilder& profile, size_t top, std::FILE* out) {
  for (const Thread& t : profile.threads()) {
    uint64_t idle = 0, busy = 0, no_stack = 0;
    std::map<uint32_t, uint64_t> by_stack;
    t.samples.for_each([&](const SampleTable::Sample& s) {
      if (!s.stack) {
        ++no_stack;
      } else if (is_idle_leaf(profile, *s.stack)) {
        ++idle;
      } else {
        ++by_stack[raw(*s.stack)];
        ++busy;
      }
    });
    std::fprintf(out, "Thread \"%s\" (tid %llu): %zu samples, %llu on CPU, %llu idle",
                 t.name.c_str(), static_cast<unsigned long long>(t.tid), t.samples.size(),
                 static_cast<unsigned long long>(busy), static_cast<unsigned long long>(idle));
    if (no_stack)
      std::fprintf(out, ", %llu without a stack", static_cast<unsigned long long>(no_stack));
    std::fprintf(out, "\n");
    if (busy == 0) {
      std::fprintf(out, "\n");
      continue;
    }
    std::map<std::string, Counts> counts;
    for (const auto& [stack, n] : by_stack) {
      std::vector<FrameIndex> frames = frames_root_first(profile, static_cast<StackIndex>(stack));
      if (frames.empty()) continue;
      counts[frame_name(profile, frames.back())].self += n;
      std::set<std::string> seen;  // recursion counts once per sample
      for (FrameIndex f : frames) {
        const std::string& name = frame_name(profile, f);
        if (seen.insert(name).second) counts[name].total += n;
      }
    }
    std::vector<std::pair<std::string, Counts>> rows(counts.begin(), counts.end());
    print_ranking(out, "by self time:", rows, true, top, busy);
    print_ranking(out, "by total time:", rows, false, top, busy);
    std::fprintf(out, "\n");
  }
  return !std::ferror(out);
}

}  // namespace inprof::symbolicate
