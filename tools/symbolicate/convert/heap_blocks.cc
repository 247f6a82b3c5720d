// A futex in the heap named by where its block was allocated (issue 43): "in a block allocated
// by Cache::Cache, at +0x28", when allocation sampling recorded that block (every allocation
// with `--allocations=all`, a sample of them otherwise). Part of StackConverter.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "convert/stack_converter.h"
#include "text_util.h"
#include "write/stack_walk.h"

namespace inprof::symbolicate {

namespace {

// The allocator's frames, the runtimes' and the profiler's, which say nothing of who allocated.
bool allocator_frame(const ProfileBuilder& b, FrameIndex frame) {
  if (in_language_runtime(b, frame)) return true;
  const std::string& name = frame_name(b, frame);
  if (name == "[inprof's own work]") return true;
  const auto resource = b.funcs().resource[raw(b.frames().func[raw(frame)])];
  return resource && b.libs()[raw(b.resources().lib[raw(*resource)])].name.starts_with("libinprof");
}

}  // namespace

std::optional<std::string> StackConverter::heap_block_name(uint64_t address, uint64_t time_ns) {
  if (!heap_blocks_) {
    // Each allocation lives until the first free of its address after it (a free can come
    // before its allocation in the file: the sampler unwinds the allocation later).
    heap_blocks_.emplace();
    std::map<uint64_t, std::vector<uint64_t>> frees;  // by address: times
    for (const RawAllocationEvent& e : model_.allocations()) {
      if (e.is_free) {
        frees[e.address].push_back(e.time_ns);
      } else if (e.size > 0) {
        heap_blocks_->push_back({e.address, e.size, e.time_ns, kNever, e.stack});
        largest_heap_block_ = std::max(largest_heap_block_, e.size);
      }
    }
    for (auto& [a, times] : frees) std::sort(times.begin(), times.end());
    for (HeapBlock& block : *heap_blocks_) {
      auto it = frees.find(block.address);
      if (it == frees.end()) continue;
      auto next = std::lower_bound(it->second.begin(), it->second.end(), block.from_ns);
      if (next != it->second.end()) block.to_ns = *next;
    }
    std::sort(heap_blocks_->begin(), heap_blocks_->end(),
              [](const HeapBlock& a, const HeapBlock& b) { return a.address < b.address; });
  }
  // The blocks starting at or below the address, nearest first, while one could still reach it.
  auto it = std::upper_bound(heap_blocks_->begin(), heap_blocks_->end(), address,
                             [](uint64_t a, const HeapBlock& b) { return a < b.address; });
  while (it != heap_blocks_->begin()) {
    const HeapBlock& block = *--it;
    if (address - block.address >= largest_heap_block_) break;
    if (address - block.address >= block.size || block.from_ns > time_ns ||
        block.to_ns <= time_ns || block.stack == kNoStack) {
      continue;
    }
    const std::optional<StackIndex> stack = stack_for(block.stack, block.from_ns, CpuUse::kMostly);
    if (!stack) return std::nullopt;
    const std::vector<FrameIndex> frames = frames_root_first(b_, *stack);
    size_t i = frames.size();
    while (i > 0 && allocator_frame(b_, frames[i - 1])) --i;
    if (i == 0) return std::nullopt;
    std::string name = "in a block allocated by " + frame_name(b_, frames[i - 1]);
    if (address != block.address) name += ", at +" + hex_u64(address - block.address);
    return name;
  }
  return std::nullopt;
}

}  // namespace inprof::symbolicate
