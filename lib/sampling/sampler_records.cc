// What the sampler writes: samples (unwound, labels placed, leaf evidence), repeats and tails,
// allocations, crash samples, counters, and the module list they refer to.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "markers/declarations.h"
#include "markers/label_stack.h"
#include "sampling/sampler.h"
#include "sampling/sampler_constants.h"
#include "sampling/thread_names.h"
#include "session/process_info.h"
#include "threads/profiler_threads.h"

namespace inprof::internal {

size_t Sampler::leaf_candidates(const StackSnapshot& snapshot, LeafCandidate* out) const {
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

uint32_t Sampler::walk_flags(const UnwindOutput& unwound, const StackSnapshot& snapshot,
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

void Sampler::enable_crash_samples() {
  crash_stack_buffer_ = make_large_array<uint8_t>(config_.stack_copy_size);
  // Touched now, as the crash writer's buffers are: a crash (out of memory, perhaps) should not be
  // the first to fault these pages in.
  std::memset(crash_stack_buffer_.get(), 0, config_.stack_copy_size);
  crash_snapshot_.buffer = crash_stack_buffer_.get();
  crash_snapshot_.capacity = config_.stack_copy_size;
}

void Sampler::write_crash_sample() {
  const UnwindOutput unwound = unwinder_->unwind(crash_snapshot_, frames_, frame_sps_);
  LeafCandidate candidates[kLeafCandidateSlots + 1];
  size_t candidate_count = 0;
  const uint32_t flags = walk_flags(unwound, crash_snapshot_, candidates, &candidate_count);
  ByteWriter w(std::span<uint8_t>(encode_buffer_.data(), encode_buffer_.size()));
  encode_sample(w, crash_tid_, relative(crash_snapshot_.time_ns), std::nullopt, flags,
                std::span<const uint64_t>(frames_.data(), unwound.count),
                std::span<const LeafCandidate>(candidates, candidate_count));
  const bool written =
      !w.overflowed() && ring_.write(static_cast<uint8_t>(RecordType::kSample), w.view());
  crash_state_.store(written ? kCrashWritten : kCrashFailed, std::memory_order_release);
}

void Sampler::set_allocation_pool(AllocationPool* pool) {
  allocation_pool_ = pool;
  // Inside the program's allocator, maybe in a signal handler: a write to the wake descriptor.
  pool->set_wake(
      [](void* sampler) {
        const int saved = errno;
        static_cast<Sampler*>(sampler)->wake();
        errno = saved;
      },
      this);
}

size_t Sampler::drain_allocations() {
  if (allocation_pool_ == nullptr || allocation_pool_->ready() == 0) return 0;
  // No module refresh here (ticks do it): listing modules takes the loader's lock, which a
  // thread allocating in a dlopen'ed constructor holds while it waits for a free slot.
  return allocation_pool_->drain([this](const AllocationSlot& slot) { write_allocation(slot); });
}

void Sampler::prepare_modules() { refresh_modules(monotonic_ns()); }

void Sampler::write_allocation(const AllocationSlot& slot) {
  // A thread born since the last listing (a short one may be gone by the next): known before its
  // first record, else the profile would have no thread to put its allocations in.
  const uint64_t tid = slot.event.tid;
  if (!threads_.count(tid) && !excluded_.count(tid) && !is_profiler_thread(tid)) {
    add_thread(tid, slot.snapshot.time_ns);
  }
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
  if (w.overflowed() || !ring_.write(static_cast<uint8_t>(RecordType::kAllocation), w.view())) {
    allocation_pool_->dropped().fetch_add(1, std::memory_order_relaxed);
  }
}

void Sampler::refresh_modules(uint64_t now) {
  module_lister_->list(module_scratch_);
  unwinder_->set_modules(module_scratch_);
  for (auto& [key, known] : modules_) known.seen = false;
  code_ranges_.clear();
  for (ModuleInfo& m : module_scratch_) {
    auto key = std::make_tuple(m.start, m.path, m.build_id);
    auto it = modules_.find(key);
    if (it == modules_.end()) {
      ModuleRecord rec;
      rec.id = next_module_id_++;
      rec.time_ns = relative(now);
      rec.start = m.start;
      rec.end = m.end;
      rec.load_bias = m.load_bias;
      rec.file_offset = m.file_offset;
      rec.flags = m.flags;
      rec.path = m.path;
      rec.build_id = m.build_id;
      metadata_.push(RecordType::kModuleLoad, rec);
      it = modules_.emplace(std::move(key), KnownModule{rec.id, false}).first;
    }
    it->second.seen = true;
    code_ranges_.insert(code_ranges_.end(), m.code_ranges.begin(), m.code_ranges.end());
  }
  for (auto it = modules_.begin(); it != modules_.end();) {
    if (!it->second.seen) {
      metadata_.push(RecordType::kModuleUnload, ModuleUnloadRecord{it->second.id, relative(now)});
      it = modules_.erase(it);
    } else {
      ++it;
    }
  }
  std::sort(code_ranges_.begin(), code_ranges_.end());
}

bool Sampler::in_code(uint64_t address) const {
  auto it = std::upper_bound(code_ranges_.begin(), code_ranges_.end(),
                             std::make_pair(address, UINT64_MAX));
  return it != code_ranges_.begin() && address < std::prev(it)->second;
}

void Sampler::write_repeat(uint64_t tid, ThreadState& state, uint64_t at,
                           std::optional<uint64_t> cpu_delta) {
  ByteWriter w(std::span<uint8_t>(encode_buffer_.data(), encode_buffer_.size()));
  encode(w, SampleRepeatRecord{tid, relative(at), cpu_delta});
  commit_record(RecordType::kSampleRepeat, w, state);
  state.last_record_ns = std::max(state.last_record_ns, at);
}

void Sampler::observe_cpu(ThreadState& state, std::optional<uint64_t> cpu, uint64_t now) {
  if (!cpu) return;
  state.observed_cpu_ns = cpu;
  state.observed_ns = now;
}

void Sampler::write_final_repeats(uint64_t now) {
  if (!config_.cpu_samples || paused_.load(std::memory_order_relaxed)) return;
  for (auto& [tid, state] : threads_) {
    const Activity& a = state.activity;
    // Known asleep since its last check (the kernel's records): the time since is idle, exactly.
    if (state.selected && state.has_stack && state.self_handle < 0 && a.watched && !a.resync &&
        !a.on_cpu && !a.switched_on && state.last_record_ns < now) {
      write_repeat(tid, state, now, uint64_t{0});
    }
  }
}

void Sampler::write_tail(uint64_t tid, ThreadState& state) {
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

void Sampler::write_cpu_repeats(uint64_t tid, ThreadState& state, uint64_t at, uint64_t cpu_ns) {
  // In pieces no larger than one sample may stand for, all of them at `at`.
  const uint64_t most = kMostIntervalsPerSample * config_.interval_ns;
  do {
    const uint64_t piece = std::min(cpu_ns, most);
    write_repeat(tid, state, at, piece);
    cpu_ns -= piece;
  } while (cpu_ns > 0);
}

UnwindOutput Sampler::write_sample(uint64_t tid, ThreadState& state, const StackSnapshot& snapshot,
                                   std::optional<uint64_t> cpu_delta, uint64_t time_ns,
                                   uint32_t extra_flags) {
  const UnwindOutput unwound = unwinder_->unwind(snapshot, frames_, frame_sps_);
  LeafCandidate candidates[kLeafCandidateSlots + 1];
  size_t candidate_count = 0;
  const uint32_t flags = walk_flags(unwound, snapshot, candidates, &candidate_count) | extra_flags;
  state.last_stack_unseen = (extra_flags & kSampleRanUnseen) != 0;
  SampleLabel labels[kMaxLabelDepth];
  const size_t label_count = place_labels(snapshot, unwound.count, labels);
  ByteWriter w(std::span<uint8_t>(encode_buffer_.data(), encode_buffer_.size()));
  encode_sample(w, tid, relative(time_ns), cpu_delta, flags,
                std::span<const uint64_t>(frames_.data(), unwound.count),
                std::span<const LeafCandidate>(candidates, candidate_count),
                std::span<const SampleLabel>(labels, label_count));
  state.has_stack = true;
  commit_record(RecordType::kSample, w, state);
  state.last_record_ns = std::max(state.last_record_ns, time_ns);
  return unwound;
}

void Sampler::commit_record(RecordType type, const ByteWriter& w, ThreadState& state) {
  if (!w.overflowed() && ring_.write(static_cast<uint8_t>(type), w.view())) {
    samples_written_.fetch_add(1, std::memory_order_relaxed);
  } else {
    samples_dropped_.fetch_add(1, std::memory_order_relaxed);
    // A repeat must refer to a sample the dump really holds.
    state.has_stack = false;
  }
}

size_t Sampler::place_labels(const StackSnapshot& snapshot, size_t count, SampleLabel* out) {
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

uint64_t Sampler::intern_label(const char* name) {
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

void Sampler::sample_counters(uint64_t now) {
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
