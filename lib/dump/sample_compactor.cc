#include "dump/sample_compactor.h"

namespace inprof::internal {

SampleCompactor::Result SampleCompactor::add(RecordType type, std::span<const uint8_t> payload,
                                             ByteBuffer& chunk) {
  SampleHead head;
  std::span<const uint8_t> stack;
  if (!split_sample(payload, head, stack)) return Result::kMalformed;
  const bool is_sample = type == RecordType::kSample;

  // Room first, so that a full chunk changes nothing.
  auto it = threads_.find(head.tid);
  const bool new_slot = it == threads_.end() || it->second.chunk != chunk_;
  if (new_slot && threads_in_chunk_ >= kMaxThreadsPerChunk) return Result::kChunkFull;
  StackTable::Found found;
  if (is_sample) {
    ByteReader r(stack);
    uint64_t flags = 0, frame_count = 0;
    if (!r.varint(flags) || !r.varint(frame_count) || frame_count > kMaxFrames) {
      return Result::kMalformed;
    }
    found = stacks_.find_or_add(stack, frame_count);
    if (found.full) return Result::kChunkFull;
    if (found.added) append_record(chunk, RecordType::kStack, stack);
  }

  if (it == threads_.end()) it = threads_.try_emplace(head.tid).first;
  ThreadState& t = it->second;
  if (new_slot) {
    t.chunk = chunk_;
    t.slot = threads_in_chunk_++;
  }
  append_varint(columns_[kThreadColumn], t.slot << 1 | (is_sample ? 1 : 0));
  // The chunk's next slot: its tid follows, once.
  if (new_slot) append_varint(columns_[kThreadColumn], head.tid);

  // Rounded up: a sample never moves before the records written ahead of it (its thread's
  // start, a module load, a resume, a capture's start).
  const uint64_t time_us =
      head.time_ns / kSampleTimeUnitNs + (head.time_ns % kSampleTimeUnitNs != 0 ? 1 : 0);
  append_varint(columns_[kTimeColumn],
                zigzag_encode(static_cast<int64_t>(time_us - batch_time_us_)));
  batch_time_us_ = time_us;

  if (head.cpu_delta_ns) {
    // The running total is rounded, not each delta: the µs deltas add up to the thread's CPU
    // time however many samples it is spread over.
    t.cpu_ns += *head.cpu_delta_ns;
    const uint64_t total_us = t.cpu_ns / kSampleTimeUnitNs;
    append_varint(columns_[kCpuColumn], total_us - t.cpu_written_us + 1);
    t.cpu_written_us = total_us;
  } else {
    append_varint(columns_[kCpuColumn], 0);
  }
  if (is_sample) append_varint(columns_[kStackColumn], found.id);
  ++batch_count_;
  return Result::kAdded;
}

size_t SampleCompactor::pending_bytes() const {
  size_t n = 0;
  for (const auto& column : columns_) n += column.size();
  return n;
}

void SampleCompactor::end_batch(ByteBuffer& chunk) {
  if (batch_count_ == 0) return;
  // Framed by hand: the payload (count, each column's size, the columns) is copied only once.
  uint8_t head[10 * (1 + kColumns)];
  ByteWriter w(std::span<uint8_t>(head, sizeof(head)));
  w.varint(batch_count_);
  for (const auto& column : columns_) w.varint(column.size());
  chunk.push_back(static_cast<uint8_t>(RecordType::kSampleBatch));
  append_varint(chunk, w.size() + pending_bytes());
  chunk.insert(chunk.end(), w.view().begin(), w.view().end());
  for (auto& column : columns_) {
    chunk.insert(chunk.end(), column.begin(), column.end());
    column.clear();
  }
  batch_count_ = 0;
  batch_time_us_ = 0;
}

void SampleCompactor::start_chunk() {
  stacks_.clear();
  ++chunk_;
  threads_in_chunk_ = 0;
}

}  // namespace inprof::internal
