#include "write/folded_writer.h"

#include <map>
#include <string>
#include <vector>

#include "write/stack_walk.h"

namespace inprof::symbolicate {
namespace {

// ';' separates frames and a space precedes the count: neither may appear inside a frame name.
std::string clean(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

}  // namespace

bool write_folded_stacks(const ProfileBuilder& profile, std::FILE* out, FoldedWeight weight) {
  std::map<std::string, uint64_t> lines;
  for (const Thread& t : profile.threads()) {
    std::map<uint32_t, uint64_t> by_stack;
    const NativeAllocationTable& a = t.allocations;
    auto add_allocation = [&](size_t row) {
      if (a.stack[row] && a.weight[row] > 0) {
        by_stack[raw(*a.stack[row])] += static_cast<uint64_t>(a.weight[row]);
      }
    };
    switch (weight) {
      case FoldedWeight::kSamples:
        t.samples.for_each([&](const SampleTable::Sample& s) {
          if (s.stack && !is_idle_leaf(profile, *s.stack)) ++by_stack[raw(*s.stack)];
        });
        break;
      case FoldedWeight::kAllocatedBytes:
        for (size_t row = 0; row < a.size(); ++row) add_allocation(row);
        break;
      case FoldedWeight::kRetainedBytes:
        for (size_t row : retained_allocation_rows(a)) add_allocation(row);
        break;
    }
    const std::string root = clean(t.name);
    for (const auto& [stack, count] : by_stack) {
      std::string line = root;
      for (FrameIndex f : frames_root_first(profile, static_cast<StackIndex>(stack))) {
        line += ';';
        line += clean(frame_name(profile, f));
      }
      lines[line] += count;
    }
  }
  for (const auto& [line, count] : lines) {
    if (std::fprintf(out, "%s %llu\n", line.c_str(), static_cast<unsigned long long>(count)) < 0) {
      return false;
    }
  }
  return !std::ferror(out);
}

}  // namespace inprof::symbolicate
