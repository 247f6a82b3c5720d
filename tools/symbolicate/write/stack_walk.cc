#include "write/stack_walk.h"

#include <algorithm>
#include <unordered_map>

namespace inprof::symbolicate {

std::vector<FrameIndex> frames_root_first(const ProfileBuilder& profile, StackIndex stack) {
  std::vector<FrameIndex> frames;
  const StackTable& st = profile.stacks();
  std::optional<StackIndex> s = stack;
  // Prefixes always point to earlier rows, so this ends; the bound guards against a bad table.
  while (s && frames.size() <= st.size()) {
    frames.push_back(st.frame[raw(*s)]);
    s = st.prefix[raw(*s)];
  }
  std::reverse(frames.begin(), frames.end());
  return frames;
}

const std::string& frame_name(const ProfileBuilder& profile, FrameIndex frame) {
  FuncIndex func = profile.frames().func[raw(frame)];
  return profile.strings()[raw(profile.funcs().name[raw(func)])];
}

bool in_language_runtime(const ProfileBuilder& profile, FrameIndex frame) {
  const auto resource = profile.funcs().resource[raw(profile.frames().func[raw(frame)])];
  if (!resource) return false;
  const std::string& lib = profile.libs()[raw(profile.resources().lib[raw(*resource)])].name;
  for (const char* runtime : {"libc.so", "libpthread.so", "libstdc++.so", "libc++.so",
                              "libc++abi.so", "ld-linux", "libgcc_s.so", "libc.musl"}) {
    if (lib.starts_with(runtime)) return true;
  }
  return false;
}

std::optional<size_t> program_frame_below_leaf(const ProfileBuilder& profile,
                                               const std::vector<FrameIndex>& frames) {
  if (frames.size() < 2) return std::nullopt;
  size_t i = frames.size() - 2;
  while (i > 0 && in_language_runtime(profile, frames[i])) --i;
  return i;
}

bool is_idle_leaf(const ProfileBuilder& profile, StackIndex stack) {
  FrameIndex leaf = profile.stacks().frame[raw(stack)];
  CategoryIndex c = profile.frames().category[raw(leaf)];
  return profile.categories()[raw(c)].name == "Idle";
}

std::vector<size_t> retained_allocation_rows(const NativeAllocationTable& table) {
  std::unordered_map<uint64_t, size_t> live;  // address -> row
  for (size_t i = 0; i < table.size(); ++i) {
    if (table.weight[i] > 0) {
      live[table.address[i]] = i;
    } else if (auto it = live.find(table.address[i]); it != live.end()) {
      live.erase(it);
    }
  }
  std::vector<size_t> rows;
  rows.reserve(live.size());
  for (const auto& [address, row] : live) rows.push_back(row);
  std::sort(rows.begin(), rows.end());
  return rows;
}

}  // namespace inprof::symbolicate
