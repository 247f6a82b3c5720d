// Sampled allocations into the profile (allocation_converter.h).
#include "convert/allocation_converter.h"

#include <algorithm>
#include <vector>

namespace inprof::symbolicate {

namespace {

struct LiveBlock {
  ThreadIndex thread;
  int64_t weight;
};

void append(NativeAllocationTable& table, uint64_t time_ns, int64_t weight,
            std::optional<StackIndex> stack, uint64_t address, uint64_t tid) {
  table.time_ns.push_back(time_ns);
  table.weight.push_back(weight);
  table.stack.push_back(stack);
  table.address.push_back(address);
  table.thread_id.push_back(tid);
}

}  // namespace

AllocationFacts convert_allocations(
    const ProfileModel& model, const std::unordered_map<uint64_t, ThreadIndex>& thread_of,
    const std::function<std::optional<StackIndex>(RawStackId, uint64_t)>& stack_for,
    ProfileBuilder& builder, Counter* memory) {
  AllocationFacts facts;
  const std::vector<RawAllocationEvent>& events = model.allocations();
  if (events.empty()) return facts;
  // Time order; at equal times an allocation before a free (a free is never earlier than its
  // allocation, and the sampler writes allocations later than the frees that follow them).
  std::vector<uint32_t> order(events.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (events[a].time_ns != events[b].time_ns) return events[a].time_ns < events[b].time_ns;
    return !events[a].is_free && events[b].is_free;
  });

  std::unordered_map<uint64_t, LiveBlock> live;
  int64_t live_bytes = 0;
  // The memory track: at most one point per millisecond (the last value in it).
  constexpr uint64_t kCounterStepNs = 1000000;
  auto note = [&](uint64_t time_ns) {
    if (memory == nullptr) return;
    const uint64_t bucket = time_ns / kCounterStepNs * kCounterStepNs;
    if (!memory->time_ns.empty() && memory->time_ns.back() == bucket) {
      memory->count.back() += live_bytes - memory->value.back();
      memory->value.back() = live_bytes;
      return;
    }
    const int64_t previous = memory->value.empty() ? 0 : memory->value.back();
    memory->time_ns.push_back(bucket);
    memory->count.push_back(live_bytes - previous);
    memory->value.push_back(live_bytes);
  };

  for (uint32_t index : order) {
    const RawAllocationEvent& e = events[index];
    if (e.is_free) {
      auto it = live.find(e.address);
      if (it == live.end()) {
        ++facts.unmatched_frees;
        continue;
      }
      append(builder.thread(it->second.thread).allocations, e.time_ns, -it->second.weight,
             std::nullopt, e.address, e.tid);
      live_bytes -= it->second.weight;
      live.erase(it);
      ++facts.matched_frees;
      note(e.time_ns);
      continue;
    }
    auto thread = thread_of.find(e.tid);
    if (thread == thread_of.end() || e.weight == 0) continue;
    auto it = live.find(e.address);
    if (it != live.end()) {
      // Its free was not seen (untracked): the viewer would keep the old block forever.
      append(builder.thread(it->second.thread).allocations, e.time_ns, -it->second.weight,
             std::nullopt, e.address, e.tid);
      live_bytes -= it->second.weight;
      live.erase(it);
      ++facts.synthetic_frees;
    }
    const int64_t weight = static_cast<int64_t>(e.weight);
    append(builder.thread(thread->second).allocations, e.time_ns, weight,
           e.stack == kNoStack ? std::nullopt : stack_for(e.stack, e.time_ns), e.address, e.tid);
    live.emplace(e.address, LiveBlock{thread->second, weight});
    live_bytes += weight;
    ++facts.allocations;
    note(e.time_ns);
  }
  facts.retained_bytes = live_bytes;
  return facts;
}

}  // namespace inprof::symbolicate
