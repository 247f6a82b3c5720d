#include "dump/chunk_samples.h"

namespace inprof::internal {

void ChunkSamples::start_chunk() {
  stack_count_ = 0;
  frame_count_ = 0;
  threads_.clear();
}

bool ChunkSamples::add_stack(ByteReader& r) {
  if (stack_count_ >= kMaxStacksPerChunk) return false;
  if (stack_count_ == stacks_.size()) stacks_.emplace_back();
  SampleRecord& stack = stacks_[stack_count_];
  if (!decode_stack(r, stack)) return false;
  frame_count_ += stack.frames.size();
  if (frame_count_ > kMaxStackFramesPerChunk) return false;
  stack.stack_key = next_key_++;
  ++stack_count_;
  return true;
}

bool ChunkSamples::read_batch(ByteReader& r, DumpVisitor& visitor, uint64_t& delivered) {
  uint64_t count = 0;
  if (!r.varint(count)) return false;
  // Columns: thread, time, CPU delta, stack (FORMAT.md).
  uint64_t sizes[4];
  for (auto& size : sizes) {
    if (!r.varint(size)) return false;
  }
  ByteReader columns[4] = {ByteReader({}), ByteReader({}), ByteReader({}), ByteReader({})};
  for (int i = 0; i < 4; ++i) {
    if (sizes[i] > r.remaining()) return false;
    columns[i] = ByteReader(r.take(sizes[i]));
  }
  auto& [threads, times, cpus, stacks] = columns;
  SampleRepeatRecord repeat;
  uint64_t time_us = 0;  // the previous entry's
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t key = 0, tid = 0, cpu = 0;
    int64_t time_delta = 0;
    if (!threads.varint(key)) return false;
    const uint64_t slot = key >> 1;
    if (slot > threads_.size()) return false;
    if (slot == threads_.size()) {  // the chunk's next thread: its tid follows
      if (threads_.size() >= kMaxThreadsPerChunk || !threads.varint(tid)) return false;
      threads_.push_back(tid);
    }
    tid = threads_[slot];
    if (!times.svarint(time_delta) || !cpus.varint(cpu)) return false;
    time_us += static_cast<uint64_t>(time_delta);
    const uint64_t time_ns = time_us * kSampleTimeUnitNs;
    const std::optional<uint64_t> cpu_delta_ns =
        cpu ? std::optional<uint64_t>((cpu - 1) * kSampleTimeUnitNs) : std::nullopt;
    if (key & 1) {
      uint64_t stack = 0;
      if (!stacks.varint(stack) || stack >= stack_count_) return false;
      // The stack's record goes out with this sample's thread and times: no copy of its frames.
      SampleRecord& s = stacks_[stack];
      s.tid = tid;
      s.time_ns = time_ns;
      s.cpu_delta_ns = cpu_delta_ns;
      visitor.on_sample(s);
    } else {
      repeat = SampleRepeatRecord{tid, time_ns, cpu_delta_ns};
      visitor.on_sample_repeat(repeat);
    }
    ++delivered;
  }
  return true;
}

}  // namespace inprof::internal
