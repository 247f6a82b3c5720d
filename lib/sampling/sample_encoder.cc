#include "sampling/sample_encoder.h"

#include <algorithm>

#include "markers/declarations.h"
#include "markers/label_stack.h"
#include "sampling/sampler_constants.h"
#include "session/process_info.h"

namespace inprof::internal {

SampleEncoder::SampleEncoder(const SamplerConfig& config, std::unique_ptr<Unwinder> unwinder,
                             RingBuffer& ring, MetadataQueue& metadata)
    : config_(config),
      unwinder_(std::move(unwinder)),
      ring_(ring),
      metadata_(metadata),
      frames_(config.max_frames),
      frame_sps_(config.max_frames),
      encode_buffer_(80 + config.max_frames * 11 + (kLeafCandidateSlots + 1) * 12 +
                     kMaxLabelDepth * 16) {}

void SampleEncoder::set_modules(const std::vector<ModuleInfo>& modules) {
  unwinder_->set_modules(modules);
  code_ranges_.clear();
  for (const ModuleInfo& m : modules) {
    code_ranges_.insert(code_ranges_.end(), m.code_ranges.begin(), m.code_ranges.end());
  }
  std::sort(code_ranges_.begin(), code_ranges_.end());
}

size_t SampleEncoder::leaf_candidates(const StackSnapshot& snapshot, LeafCandidate* out) const {
  size_t count = 0;
  for (int slot = 0; slot < kLeafCandidateSlots; ++slot) {
    uint64_t word;
    if (snapshot.read_word(snapshot.sp() + 8 * slot, &word) && in_code(word)) {
      out[count++] = {static_cast<uint8_t>(slot), word};
    }
  }
  // Where calls leave the return address in a register, a function that has not saved it (a
  // leaf, a prologue, an epilogue) returns through it: the link register is a candidate too.
  if constexpr (kHasLinkRegister) {
    const uint64_t lr = code_address(snapshot.regs[kRegLr]);
    if (in_code(lr)) out[count++] = {kLeafCandidateLinkRegister, lr};
  }
  return count;
}

uint32_t SampleEncoder::walk_flags(const UnwindOutput& unwound, const StackSnapshot& snapshot,
                                   LeafCandidate* candidates, size_t* candidate_count) const {
  uint32_t flags = 0;
  if (unwound.result == UnwindResult::kTruncated) flags |= kSampleTruncatedCopy;
  if (unwound.result == UnwindResult::kDepthLimit) flags |= kSampleDepthLimit;
  if (!snapshot.stack_found) flags |= kSampleNoStack;
  if (unwound.result == UnwindResult::kComplete && !unwound.reached_end) {
    flags |= kSampleIncomplete;
  }
  *candidate_count = 0;
  if (unwound.frame_pointer_walk) {
    flags |= kSampleFramePointerWalk;
    *candidate_count = leaf_candidates(snapshot, candidates);
  }
  return flags;
}

bool SampleEncoder::write_crash_sample(uint64_t tid, const StackSnapshot& snapshot) {
  const UnwindOutput unwound = unwinder_->unwind(snapshot, frames_, frame_sps_);
  LeafCandidate candidates[kLeafCandidateSlots + 1];
  size_t candidate_count = 0;
  const uint32_t flags = walk_flags(unwound, snapshot, candidates, &candidate_count);
  ByteWriter w(std::span<uint8_t>(encode_buffer_.data(), encode_buffer_.size()));
  encode_sample(w, tid, relative(snapshot.time_ns), std::nullopt, flags,
                std::span<const uint64_t>(frames_.data(), unwound.count),
                std::span<const LeafCandidate>(candidates, candidate_count));
  return !w.overflowed() && ring_.write(static_cast<uint8_t>(RecordType::kSample), w.view());
}

bool SampleEncoder::write_allocation(const AllocationSlot& slot) {
  const UnwindOutput unwound = unwinder_->unwind(slot.snapshot, frames_, frame_sps_);
  LeafCandidate candidates[kLeafCandidateSlots + 1];
  size_t candidate_count = 0;
  // The leaf is exact (the allocator's caller, below): no leaf fix-up.
  uint32_t flags = walk_flags(unwound, slot.snapshot, candidates, &candidate_count) &
                   ~uint32_t(kSampleFramePointerWalk | kSampleOnCpu);
  // The walk starts in the profiler's sink; the stack the program sees starts at the call into
  // the allocator. Its return address minus one names the call instruction.
  size_t first = unwound.count;
  for (size_t i = 1; i < unwound.count; ++i) {
    if (frames_[i] == slot.event.caller_pc) {
      first = i;
      break;
    }
  }
  size_t count = unwound.count;
  if (first < unwound.count) {
    frames_[first] = slot.event.caller_pc - 1;
  } else {
    // The walk did not reach the caller (its module not listed yet — a dlopen whose constructor
    // allocates, drained before the next tick — or code without unwind information): the call
    // into the allocator alone, marked incomplete, rather than the profiler's own frames.
    first = 0;
    count = 1;
    frames_[0] = slot.event.caller_pc - 1;
    flags |= kAllocationCallerNotFound | kSampleIncomplete;
  }
  const InprofAllocationEvent& e = slot.event;
  ByteWriter w(std::span<uint8_t>(encode_buffer_.data(), encode_buffer_.size()));
  encode_allocation(w, e.tid, relative(slot.snapshot.time_ns), e.address, e.size, e.weight, e.kind,
                    flags, std::span<const uint64_t>(frames_.data() + first, count - first));
  return !w.overflowed() && ring_.write(static_cast<uint8_t>(RecordType::kAllocation), w.view());
}

bool SampleEncoder::in_code(uint64_t address) const {
  auto it = std::upper_bound(code_ranges_.begin(), code_ranges_.end(),
                             std::make_pair(address, UINT64_MAX));
  return it != code_ranges_.begin() && address < std::prev(it)->second;
}

void SampleEncoder::write_repeat(uint64_t tid, ThreadState& state, uint64_t at,
                                 std::optional<uint64_t> cpu_delta) {
  ByteWriter w(std::span<uint8_t>(encode_buffer_.data(), encode_buffer_.size()));
  encode(w, SampleRepeatRecord{tid, relative(at), cpu_delta});
  commit_record(RecordType::kSampleRepeat, w, state);
  state.last_record_ns = std::max(state.last_record_ns, at);
}

void SampleEncoder::write_tail(uint64_t tid, ThreadState& state) {
  if (!state.has_stack || !state.observed_cpu_ns || !state.last_cpu_ns ||
      *state.observed_cpu_ns <= *state.last_cpu_ns) {
    return;
  }
  const uint64_t tail = *state.observed_cpu_ns - *state.last_cpu_ns;
  state.last_cpu_ns = state.observed_cpu_ns;
  // After its last record (a thread's times only grow: a snapshot drained at this tick may be
  // later than the reading).
  const uint64_t at = std::max(state.observed_ns, state.last_record_ns + 1);
  // On a stack it ran unseen above, in pieces; on a stack it ran in, one repeat (symbolicate
  // counts what is past one sample's worth as not represented, not as that code's).
  if (state.last_stack_unseen) {
    write_cpu_repeats(tid, state, at, tail);
  } else {
    write_repeat(tid, state, at, tail);
  }
}

void SampleEncoder::write_cpu_repeats(uint64_t tid, ThreadState& state, uint64_t at,
                                      uint64_t cpu_ns) {
  // In pieces no larger than one sample may stand for, all of them at `at`.
  const uint64_t most = kMostIntervalsPerSample * config_.interval_ns;
  do {
    const uint64_t piece = std::min(cpu_ns, most);
    write_repeat(tid, state, at, piece);
    cpu_ns -= piece;
  } while (cpu_ns > 0);
}

UnwindOutput SampleEncoder::write_sample(uint64_t tid, ThreadState& state,
                                         const StackSnapshot& snapshot,
                                         std::optional<uint64_t> cpu_delta, uint64_t time_ns,
                                         uint32_t extra_flags) {
  const UnwindOutput unwound = unwinder_->unwind(snapshot, frames_, frame_sps_);
  LeafCandidate candidates[kLeafCandidateSlots + 1];
  size_t candidate_count = 0;
  const uint32_t flags = walk_flags(unwound, snapshot, candidates, &candidate_count) | extra_flags;
  state.last_stack_unseen = (extra_flags & kSampleRanUnseen) != 0;
  SampleLabel labels[kMaxLabelDepth];
  const size_t label_count = place_labels(snapshot, unwound.count, labels);
  // Copied asleep in a system call: what it waits in, and on.
  std::optional<SampleWait> wait;
  if (snapshot.wait_call >= 0 && snapshot.wait_call <= UINT32_MAX && !(flags & kSampleOnCpu)) {
    wait = SampleWait{static_cast<uint32_t>(snapshot.wait_call), snapshot.wait_object,
                      snapshot.wait_object_kind};
  }
  ByteWriter w(std::span<uint8_t>(encode_buffer_.data(), encode_buffer_.size()));
  encode_sample(w, tid, relative(time_ns), cpu_delta, flags,
                std::span<const uint64_t>(frames_.data(), unwound.count),
                std::span<const LeafCandidate>(candidates, candidate_count),
                std::span<const SampleLabel>(labels, label_count), wait);
  state.has_stack = true;
  commit_record(RecordType::kSample, w, state);
  state.last_record_ns = std::max(state.last_record_ns, time_ns);
  return unwound;
}

void SampleEncoder::commit_record(RecordType type, const ByteWriter& w, ThreadState& state) {
  if (!w.overflowed() && ring_.write(static_cast<uint8_t>(type), w.view())) {
    samples_written_.fetch_add(1, std::memory_order_relaxed);
  } else {
    samples_dropped_.fetch_add(1, std::memory_order_relaxed);
    // A repeat must refer to a sample the dump really holds.
    state.has_stack = false;
  }
}

size_t SampleEncoder::place_labels(const StackSnapshot& snapshot, size_t count, SampleLabel* out) {
  // A label lives in the frame of the function that pushed it: frame k spans
  // [sp[k], sp[k + 1]). In leaf-first order it goes just before that function's frame.
  for (size_t i = 0; i < snapshot.label_count; ++i) {
    const LabelEntry& e = snapshot.labels[i];
    uint32_t position = static_cast<uint32_t>(count);
    for (size_t k = 0; k < count; ++k) {
      const uint64_t end = k + 1 < count ? frame_sps_[k + 1] : UINT64_MAX;
      if (e.address < end) {
        position = static_cast<uint32_t>(k);
        break;
      }
    }
    out[i] = SampleLabel{position, intern_label(e.name), e.category};
  }
  return snapshot.label_count;
}

uint64_t SampleEncoder::intern_label(const char* name) {
  auto [it, inserted] = label_ids_.try_emplace(name, 0);
  if (!inserted) return it->second;
  // The pointer came from the sampled thread: read it without trusting it.
  char text[128];
  const size_t n = read_memory(reinterpret_cast<uint64_t>(name), text, sizeof(text));
  size_t length = 0;
  while (length < n && text[length] != '\0') ++length;
  it->second = next_string_id_++;
  metadata_.push(RecordType::kString,
                 StringRecord{it->second, length ? std::string(text, length) : "(label)"});
  return it->second;
}

void SampleEncoder::write_counters(uint64_t now) {
  Declarations& declarations = Declarations::instance();
  if (declarations.counter_count() != counters_.size()) {
    for (const auto& cell : declarations.counters()) {
      if (cell.id >= counters_.size()) counters_.push_back({cell.id, cell.value});
    }
  }
  uint8_t buffer[32];
  for (CounterState& c : counters_) {
    const int64_t value = c.value->load(std::memory_order_relaxed);
    if (c.written && value == c.last) continue;
    ByteWriter w(buffer);
    encode(w, CounterSampleRecord{c.id, relative(now), value});
    if (ring_.write(static_cast<uint8_t>(RecordType::kCounterSample), w.view())) {
      c.written = true;
      c.last = value;
    }
  }
}

}  // namespace inprof::internal
