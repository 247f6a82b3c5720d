#include "session/window_repeats.h"

#include "dump/byte_io.h"

namespace inprof::internal {

std::span<const uint8_t> WindowRepeats::pass(RecordType* type, std::span<const uint8_t> payload) {
  if (*type != RecordType::kSample && *type != RecordType::kSampleRepeat) return payload;
  SampleHead head;
  std::span<const uint8_t> stack;
  if (!split_sample(payload, head, stack)) return payload;  // malformed: the reader says so
  if (*type == RecordType::kSample) {
    last_stack_[head.tid].assign(stack.begin(), stack.end());
    sampled_.insert(head.tid);
    return payload;
  }
  if (sampled_.count(head.tid)) return payload;
  const auto it = last_stack_.find(head.tid);
  if (it == last_stack_.end()) return payload;  // repeats nothing the dump had: as it was
  sampled_.insert(head.tid);
  rebuilt_.clear();
  {
    ByteWriter w(&rebuilt_);
    encode(w, SampleRepeatRecord{head.tid, head.time_ns, head.cpu_delta_ns});  // a sample's head
  }
  rebuilt_.insert(rebuilt_.end(), it->second.begin(), it->second.end());
  *type = RecordType::kSample;
  return rebuilt_;
}

void WindowRepeats::new_window() {
  sampled_.clear();
  for (uint64_t tid : ended_) last_stack_.erase(tid);
  ended_.clear();
}

}  // namespace inprof::internal
