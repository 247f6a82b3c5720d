#include "profile_model.h"

namespace inprof::symbolicate {

namespace {
// Flags that change how a stack is converted; the others do not split identical stacks.
constexpr uint32_t kStackFlags = internal::kSampleTruncatedCopy | internal::kSampleDepthLimit |
                                 internal::kSampleFramePointerWalk;
}  // namespace

size_t ProfileModel::KeyHash::operator()(const std::vector<uint64_t>& key) const {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t v : key) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0x100000001b3ull;
  }
  return static_cast<size_t>(h);
}

void ProfileModel::on_process(const internal::ProcessRecord& r) { process_ = r; }

void ProfileModel::on_module_load(const internal::ModuleRecord& r) {
  module_by_id_[r.id] = modules_.size();
  modules_.push_back(ModuleInfo{r, kNever});
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
  auto it = stack_ids_.find(key_scratch_);
  if (it != stack_ids_.end()) return it->second;

  auto id = static_cast<RawStackId>(stacks_.size());
  auto stack = std::make_unique<RawStack>();
  stack->frames = r.frames;
  stack->flags = flags;
  if (keep_candidates) stack->leaf_candidates = r.leaf_candidates;
  stacks_.push_back(std::move(stack));
  stack_ids_.emplace(key_scratch_, id);
  return id;
}

void ProfileModel::on_sample(const internal::SampleRecord& r) {
  RawStackId id = r.frames.empty() ? kNoStack : intern(r);
  thread(r.tid).samples.push_back(RawSample{r.time_ns, r.cpu_delta_ns, id});
  last_stack_by_tid_[r.tid] = id;
  any_cpu_delta_ |= r.cpu_delta_ns.has_value();
  ++sample_count_;
}

void ProfileModel::on_sample_repeat(const internal::SampleRepeatRecord& r) {
  RawStackId id = kNoStack;
  auto it = last_stack_by_tid_.find(r.tid);
  if (it != last_stack_by_tid_.end()) {
    id = it->second;
  } else {
    ++orphan_repeats_;
  }
  thread(r.tid).samples.push_back(RawSample{r.time_ns, r.cpu_delta_ns, id});
  any_cpu_delta_ |= r.cpu_delta_ns.has_value();
  ++sample_count_;
}

void ProfileModel::on_stats(const internal::StatsRecord& r) { stats_ = r; }

void ProfileModel::on_end(const internal::EndRecord& r) { end_ns_ = r.time_ns; }

}  // namespace inprof::symbolicate
