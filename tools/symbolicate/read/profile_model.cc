#include "read/profile_model.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace inprof::symbolicate {

namespace {
// Flags that change how a stack is converted; the others do not split identical stacks.
constexpr uint32_t kStackFlags = internal::kSampleTruncatedCopy | internal::kSampleDepthLimit |
                                 internal::kSampleFramePointerWalk | internal::kSampleNoStack |
                                 internal::kSampleIncomplete | internal::kSampleRanUnseen;
}  // namespace

uint64_t ProfileModel::key_hash(std::span<const uint64_t> key) {
  // Four independent lanes: every sample's stack is hashed, and one multiply chain through 40
  // frames was a visible part of reading a long recording.
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;
  uint64_t h[4] = {key.size(), 0x243f6a8885a308d3ull, 0x13198a2e03707344ull, 0xa4093822299f31d0ull};
  size_t i = 0;
  for (; i + 4 <= key.size(); i += 4) {
    for (int lane = 0; lane < 4; ++lane) h[lane] = (h[lane] ^ key[i + lane]) * kMul;
  }
  for (; i < key.size(); ++i) h[0] = (h[0] ^ key[i]) * kMul;
  uint64_t x = h[0] ^ (h[1] >> 17) ^ (h[2] << 23) ^ (h[3] >> 31) ^ h[1] ^ h[2] ^ h[3];
  x = (x ^ (x >> 29)) * kMul;
  return x ^ (x >> 32);
}

void ProfileModel::on_process(const internal::ProcessRecord& r) { process_ = r; }

void ProfileModel::on_module_load(const internal::ModuleRecord& r) {
  module_by_id_[r.id] = modules_.size();
  modules_.push_back(ModuleInfo{r, kNever, nullptr});
}

void ProfileModel::on_module_image(const internal::ModuleImageRecord& r) {
  auto it = module_by_id_.find(r.id);
  if (it == module_by_id_.end() || r.bytes.empty()) return;  // an image of no known module
  modules_[it->second].image = std::make_shared<const std::vector<uint8_t>>(r.bytes);
}

void ProfileModel::on_module_unload(const internal::ModuleUnloadRecord& r) {
  auto it = module_by_id_.find(r.id);
  if (it != module_by_id_.end()) modules_[it->second].unload_ns = r.time_ns;
}

ThreadInfo& ProfileModel::thread(uint64_t tid) {
  auto [it, inserted] = thread_by_tid_.try_emplace(tid, threads_.size());
  if (inserted) {
    threads_.emplace_back();
    threads_.back().tid = tid;
  }
  return threads_[it->second];
}

void ProfileModel::on_thread_start(const internal::ThreadRecord& r) {
  saw_time(r.time_ns);
  ThreadInfo& t = thread(r.tid);
  if (!t.start_ns || r.time_ns < *t.start_ns) t.start_ns = r.time_ns;
  if (!r.name.empty()) t.name = r.name;
  if (r.flags & internal::kThreadMain) t.is_main = true;
}

void ProfileModel::on_thread_name(const internal::ThreadRecord& r) {
  ThreadInfo& t = thread(r.tid);
  if (!r.name.empty()) t.name = r.name;
  if (r.flags & internal::kThreadMain) t.is_main = true;
}

void ProfileModel::on_thread_end(const internal::ThreadEndRecord& r) {
  saw_time(r.time_ns);
  thread(r.tid).end_ns = r.time_ns;
}

RawStackId ProfileModel::intern(const internal::SampleRecord& r) {
  uint32_t flags = r.flags & kStackFlags;
  bool keep_candidates = flags & internal::kSampleFramePointerWalk;
  key_scratch_.clear();
  key_scratch_.push_back(flags);
  key_scratch_.push_back(r.frames.size());
  key_scratch_.insert(key_scratch_.end(), r.frames.begin(), r.frames.end());
  if (keep_candidates) {
    for (const auto& c : r.leaf_candidates) {
      key_scratch_.push_back(c.slot);
      key_scratch_.push_back(c.value);
    }
  }
  // Labels split stacks too. The frame count above keeps frames and labels from running
  // into each other.
  key_scratch_.push_back(r.labels.size());
  for (const auto& l : r.labels) {
    key_scratch_.push_back(l.position);
    key_scratch_.push_back(l.string_id);
    key_scratch_.push_back(l.category);
  }
  // So does what a sleeping thread waits on (the same stack waiting on two locks is two).
  key_scratch_.push_back(r.wait ? uint64_t{r.wait->call} + 1 : 0);
  key_scratch_.push_back(r.wait ? r.wait->object : 0);
  key_scratch_.push_back(r.wait ? r.wait->object_kind : 0);
  const auto next = static_cast<RawStackId>(stacks_.size());
  const std::span<const uint64_t> key(key_scratch_);
  const RawStackId found = stack_ids_.find_or_insert(key_hash(key), next, [&](uint32_t r) {
    return std::equal(key.begin(), key.end(), stack_keys_.begin() + key_begin_[r],
                      stack_keys_.begin() + key_begin_[r + 1]);
  });
  if (found != next) return found;
  stack_keys_.insert(stack_keys_.end(), key.begin(), key.end());
  key_begin_.push_back(stack_keys_.size());

  auto id = next;
  auto stack = std::make_unique<RawStack>();
  stack->frames = r.frames;
  stack->flags = flags;
  if (keep_candidates) stack->leaf_candidates = r.leaf_candidates;
  stack->labels = r.labels;
  stack->wait = r.wait;
  stacks_.push_back(std::move(stack));
  return id;
}

RawStackId ProfileModel::stack_of(const internal::SampleRecord& r) {
  if (r.frames.empty() && r.labels.empty()) return kNoStack;
  // Every sample that refers to the same stack record carries the same key: interned once.
  constexpr RawStackId kNotYet = kNoStack;
  if (r.stack_key == 0 || r.stack_key > std::numeric_limits<uint32_t>::max()) return intern(r);
  const size_t index = r.stack_key - 1;
  if (index >= stack_by_key_.size()) stack_by_key_.resize(index + 1, kNotYet);
  if (stack_by_key_[index] == kNotYet) stack_by_key_[index] = intern(r);
  return stack_by_key_[index];
}

namespace {

CpuUse cpu_use(const RawSampleList& earlier, uint64_t time_ns, std::optional<uint64_t> cpu_ns,
               bool repeat, bool on_cpu) {
  // Taken while it ran (after an interval of its CPU): on a CPU, however long it waited for one
  // before, and in a system call only to run it (kernel time).
  if (on_cpu) return CpuUse::kMostly;
  // A repeat says the thread has not run since its previous sample; one that carries CPU time
  // stands for intervals the thread ran through (its CPU timer's expirations merged at the
  // kernel's tick).
  if (repeat && (!cpu_ns || *cpu_ns == 0)) return CpuUse::kNone;
  // A repeat with CPU time is only ever an interval its timer's merged expirations stand for.
  if (repeat) return CpuUse::kMostly;
  if (!cpu_ns) return CpuUse::kUnknown;
  const std::optional<uint64_t> last = earlier.last_time();
  if (!last || time_ns <= *last) return *cpu_ns == 0 ? CpuUse::kLittle : CpuUse::kUnknown;
  return *cpu_ns >= (time_ns - *last) / 2 ? CpuUse::kMostly : CpuUse::kLittle;
}

}  // namespace

void ProfileModel::on_sample(const internal::SampleRecord& r) {
  RawStackId id = stack_of(r);
  RawSampleList& samples = thread(r.tid).samples;
  // Asleep, with any CPU it carries run unseen before (see kSampleRanUnseen): CPU or none.
  // Copied asleep in a system call (its wait is known), with CPU since its previous sample: that
  // CPU ran before it fell asleep, where no sample saw it (bursts between two checks of a thread
  // without a timer or ring; the library left it on the only stack it knew). The sample is the
  // sleep; the CPU goes above it under [ran between samples], as the library writes such CPU
  // itself (a waker beside 1,000 sleepers lost 4 of its 33 ms as idle time this way).
  const bool ran_before_sleep =
      !(r.flags & (internal::kSampleOnCpu | internal::kSampleRanUnseen)) && r.wait &&
      r.cpu_delta_ns.value_or(0) > 0;
  const std::optional<uint64_t> cpu = ran_before_sleep ? uint64_t{0} : r.cpu_delta_ns;
  const CpuUse use =
      (r.flags & internal::kSampleRanUnseen)
          ? (cpu.value_or(0) > 0 ? CpuUse::kMostly : CpuUse::kNone)
          : cpu_use(samples, r.time_ns, cpu, false, (r.flags & internal::kSampleOnCpu) != 0);
  push_sample(samples, RawSample{r.time_ns, cpu, id, use},
              (r.flags & internal::kSampleRanUnseen) != 0);
  if (ran_before_sleep) {
    internal::SampleRecord above = r;
    above.flags |= internal::kSampleRanUnseen;
    push_sample(samples, RawSample{r.time_ns, r.cpu_delta_ns, intern(above), CpuUse::kMostly},
                true);
    ++added_samples_;
  }
  saw_time(r.time_ns);
  last_stack_by_tid_[r.tid] = id;
  any_cpu_delta_ |= r.cpu_delta_ns.has_value();
  ++sample_count_;
}

void ProfileModel::on_allocation(const internal::AllocationRecord& r) {
  internal::SampleRecord stack;
  stack.flags = r.flags;
  stack.frames = r.frames;
  RawAllocationEvent event;
  event.time_ns = r.time_ns;
  event.tid = r.tid;
  event.address = r.address;
  event.size = r.size;
  event.weight = r.weight;
  event.stack = r.frames.empty() ? kNoStack : intern(stack);
  allocations_.push_back(event);
  thread(r.tid);  // its rows go in its table, even if it was never sampled
  saw_time(r.time_ns);
}

void ProfileModel::on_free(const internal::FreeRecord& r) {
  RawAllocationEvent event;
  event.time_ns = r.time_ns;
  event.tid = r.tid;
  event.address = r.address;
  event.is_free = true;
  allocations_.push_back(event);
  saw_time(r.time_ns);
}

void ProfileModel::fill_sleep(RawSampleList& samples, RawStackId stack, CpuUse use,
                              uint64_t until_ns) {
  // A repeat without CPU says its thread sat in that stack since its previous sample; the
  // library checks a sleeping thread as rarely as every 1,024 intervals, and a range selected
  // inside such a sleep would show the thread with no sample at all (main, asleep in join(),
  // had none in the 90 ms before a pause). Samples at most kSleepStepIntervals intervals (and
  // kSleepStepNs) apart: the same stack, each weighing the time since the one before it (any
  // range of 50 ms shows it; 1,000 threads asleep for 3 s add 60,000 samples, not one per tick).
  const std::optional<uint64_t> previous = samples.last_time();
  if (stack == kNoStack || use != CpuUse::kNone || !previous || until_ns <= *previous) return;
  const uint64_t interval = process_ ? process_->interval_ns : 0;
  const uint64_t step = std::max(kSleepStepIntervals * interval, kSleepStepNs);
  for (uint64_t t = *previous + step; t + step / 2 <= until_ns; t += step) {
    samples.push_back(RawSample{t, uint64_t{0}, stack, CpuUse::kNone});
    ++added_samples_;
  }
}

void ProfileModel::push_sample(RawSampleList& samples, RawSample s, bool unseen) {
  // CPU beyond what one sample may stand for came from a gap in the sampling (a thread given up
  // for a while, a ring read late, kernel time its ring does not sample: 8 ms of a waker's 47 on
  // one ring sample 0.1 ms after the one before). Not the sample's code, which did not run it
  // all, and not dropped either: samples of its own at the same time carry it, one sample's
  // worth each, under a [ran between samples] frame at the root (where it ran is not known).
  // CPU already run unseen stays on its own stack ([ran between samples] above where the thread
  // slept), in pieces as the library writes them. Not on Windows, whose CPU clock moves at the
  // scheduler's tick (SampleWeigher weighs its samples one interval each).
  const uint64_t interval = process_ ? process_->interval_ns : 0;
  const uint64_t most = kGapPieceIntervals * interval;
  if (most == 0 || s.cpu_use != CpuUse::kMostly || !s.cpu_delta_ns || *s.cpu_delta_ns <= most ||
      process_->os == "windows") {
    samples.push_back(s);
    return;
  }
  uint64_t beyond = *s.cpu_delta_ns - most;
  if (!unseen) {
    ++gap_samples_;
    gap_cpu_ns_ += beyond;
  }
  const RawStackId pieces = unseen ? s.stack : gap_stack();
  for (uint32_t piece = 1; beyond > 0; ++piece) {
    const uint64_t cpu = piece == kMostGapPieces ? beyond : std::min(beyond, most);
    samples.push_back(RawSample{s.time_ns, cpu, pieces, CpuUse::kMostly});
    ++added_samples_;
    beyond -= cpu;
  }
  s.cpu_delta_ns = most;
  samples.push_back(s);
}

RawStackId ProfileModel::unseen_variant(RawStackId id) {
  internal::SampleRecord r;
  const RawStack& raw = *stacks_[id];
  r.flags = raw.flags | internal::kSampleRanUnseen;
  r.frames = raw.frames;
  r.leaf_candidates = raw.leaf_candidates;
  r.labels = raw.labels;
  r.wait = raw.wait;
  return intern(r);
}

RawStackId ProfileModel::gap_stack() {
  if (gap_stack_ == kNoStack) {
    internal::SampleRecord none;
    none.flags = internal::kSampleRanUnseen;
    gap_stack_ = intern(none);
  }
  return gap_stack_;
}

void ProfileModel::on_sample_repeat(const internal::SampleRepeatRecord& r) {
  RawStackId id = kNoStack;
  auto it = last_stack_by_tid_.find(r.tid);
  if (it != last_stack_by_tid_.end()) {
    id = it->second;
  } else {
    ++orphan_repeats_;
  }
  RawSampleList& samples = thread(r.tid).samples;
  // A repeat with CPU of a stack copied asleep in a system call: the CPU its thread ran since,
  // where no sample saw it (its tail, written as it ended), is not that sleep's but under [ran
  // between samples] above it, as on_sample() puts the CPU such a copy carries.
  if (id != kNoStack && r.cpu_delta_ns.value_or(0) > 0 && stacks_[id]->wait &&
      !(stacks_[id]->flags & internal::kSampleRanUnseen)) {
    id = unseen_variant(id);
  }
  const CpuUse use = cpu_use(samples, r.time_ns, r.cpu_delta_ns, true, false);
  fill_sleep(samples, id, use, r.time_ns);
  push_sample(samples, RawSample{r.time_ns, r.cpu_delta_ns, id, use},
              id != kNoStack && (stacks_[id]->flags & internal::kSampleRanUnseen));
  saw_time(r.time_ns);
  any_cpu_delta_ |= r.cpu_delta_ns.has_value();
  ++sample_count_;
}

void ProfileModel::on_stats(const internal::StatsRecord& r) {
  stats_ = r;
  stats_history_.push_back(r);
}

void ProfileModel::on_end(const internal::EndRecord& r) {
  end_ns_ = r.time_ns;
  saw_time(r.time_ns);
}

void ProfileModel::on_category(const internal::CategoryRecord& r) { categories_[r.id] = r; }

void ProfileModel::on_marker_schema(const internal::MarkerSchemaRecord& r) { schemas_[r.type] = r; }

void ProfileModel::on_marker(const internal::MarkerRecord& r) {
  markers_.push_back(r);
  saw_time(std::max(r.start_ns, r.end_ns));
}

void ProfileModel::on_string(const internal::StringRecord& r) { strings_[r.id] = r.text; }

const std::string* ProfileModel::string(uint64_t id) const {
  auto it = strings_.find(id);
  return it == strings_.end() ? nullptr : &it->second;
}

CounterInfo& ProfileModel::counter(uint32_t id) {
  auto [it, inserted] = counter_by_id_.try_emplace(id, counters_.size());
  if (inserted) {
    counters_.emplace_back();
    counters_.back().record.id = id;
  }
  return counters_[it->second];
}

void ProfileModel::on_counter(const internal::CounterRecord& r) {
  CounterInfo& c = counter(r.id);
  c.record = r;
  c.declared = true;
}

// Samples and declarations travel through different buffers, so a sample may come first.
void ProfileModel::on_counter_sample(const internal::CounterSampleRecord& r) {
  saw_time(r.time_ns);
  counter(r.id).samples.push_back(r);
}

void ProfileModel::on_pause(const internal::PauseRecord& r) {
  saw_time(r.time_ns);
  // A second pause while paused changes nothing (the library ignores it too).
  if (!pauses_.empty() && !pauses_.back().end_ns) return;
  pauses_.push_back(PauseRange{r.time_ns, std::nullopt});
}

void ProfileModel::on_resume(const internal::PauseRecord& r) {
  saw_time(r.time_ns);
  if (pauses_.empty() || pauses_.back().end_ns) return;  // a resume without a pause
  pauses_.back().end_ns = std::max(r.time_ns, pauses_.back().start_ns);
}

// Parsed as it arrives, so memory follows the number of ranges, not the size of the text.
void ProfileModel::on_jit_map(const internal::JitMapRecord& r) { jit_map_.add_piece(r.text); }

void RawSampleList::write(uint64_t v) {
  while (v >= 0x80) {
    bytes_.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  bytes_.push_back(static_cast<uint8_t>(v));
}

void RawSampleList::push_back(const RawSample& s) {
  if (s.time_ns < last_time_) in_order_ = false;
  uint64_t stack = s.stack == kNoStack ? 0 : uint64_t(s.stack) + 1;
  write(stack << 2 | static_cast<uint64_t>(s.cpu_use));
  int64_t delta = static_cast<int64_t>(s.time_ns - last_time_);
  write((static_cast<uint64_t>(delta) << 1) ^ static_cast<uint64_t>(delta >> 63));  // zig-zag
  write(s.cpu_delta_ns ? std::min<uint64_t>(*s.cpu_delta_ns, UINT64_MAX - 1) + 1 : 0);
  last_time_ = s.time_ns;
  ++size_;
}

std::vector<RawSample> RawSampleList::to_vector() const {
  std::vector<RawSample> out;
  out.reserve(size_);
  for_each([&](const RawSample& s) { out.push_back(s); });
  return out;
}

std::string tick_cost_text(const internal::StatsRecord& s) {
  if (s.sampler_ticks == 0) return "";
  char text[160];
  std::snprintf(
      text, sizeof(text),
      ", of which the sampler %.1f ms in %" PRIu64 " ticks (%.1f us each, at most %.1f us)",
      double(s.sampler_cpu_ns) / 1e6, s.sampler_ticks,
      double(s.sampler_cpu_ns) / double(s.sampler_ticks) / 1e3, double(s.tick_cpu_max_ns) / 1e3);
  return text;
}

std::string kernel_rings_text(const internal::StatsRecord& s) {
  const uint64_t refused =
      s.rings_refused_allowance + s.rings_refused_permission + s.rings_refused_other;
  if (refused == 0 && s.activity_followed != 2) return "";
  std::string text = "kernel sampling rings refused " + std::to_string(refused) + " times";
  std::string causes;
  auto cause = [&](uint64_t n, const char* why) {
    if (n == 0) return;
    causes += (causes.empty() ? ": " : "; ") + std::to_string(n) + " " + why;
  };
  cause(s.rings_refused_allowance,
        "over the user's perf allowance (kernel.perf_event_mlock_kb, shared by every process of "
        "the user: another perf user such as `perf record` may hold it; inprof never takes the "
        "program's RLIMIT_MEMLOCK)");
  cause(s.rings_refused_permission, "not permitted (kernel.perf_event_paranoid, seccomp)");
  cause(s.rings_refused_other, "for another reason");
  text += causes;
  text += "; busy threads were sampled by CPU-clock timers instead";
  if (s.activity_followed == 2) {
    text += ", and idle threads' activity was asked of their clocks (costs more with many threads)";
  }
  return text;
}

std::string profiler_cpu_text(uint64_t cpu_ns, const std::optional<uint64_t>& end_ns) {
  char text[96];
  if (end_ns && *end_ns > 0) {
    std::snprintf(text, sizeof(text), "%.1f ms of CPU (%.1f %% of one CPU over the profile)",
                  double(cpu_ns) / 1e6, 100.0 * double(cpu_ns) / double(*end_ns));
  } else {
    std::snprintf(text, sizeof(text), "%.1f ms of CPU", double(cpu_ns) / 1e6);
  }
  return text;
}

}  // namespace inprof::symbolicate
