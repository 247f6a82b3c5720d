// What the sampler writes besides a tick's samples, through the sample encoder: crash samples,
// allocations (and the threads they name), the module list every record refers to, and the
// session's last repeats.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sampling/sampler.h"
#include "sampling/sampler_constants.h"
#include "session/process_info.h"
#include "threads/profiler_threads.h"

namespace inprof::internal {

void Sampler::enable_crash_samples() {
  crash_stack_buffer_ = make_large_array<uint8_t>(config_.stack_copy_size);
  // Touched now, as the crash writer's buffers are: a crash (out of memory, perhaps) should not be
  // the first to fault these pages in.
  std::memset(crash_stack_buffer_.get(), 0, config_.stack_copy_size);
  crash_snapshot_.buffer = crash_stack_buffer_.get();
  crash_snapshot_.capacity = config_.stack_copy_size;
}

void Sampler::write_crash_sample() {
  const bool written = encoder_.write_crash_sample(crash_tid_, crash_snapshot_);
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
  visitor_.note_thread(tid, slot.snapshot.time_ns);
  if (!encoder_.write_allocation(slot)) {
    allocation_pool_->dropped().fetch_add(1, std::memory_order_relaxed);
  }
}

void Sampler::refresh_modules(uint64_t now) {
  module_lister_->list(module_scratch_);
  encoder_.set_modules(module_scratch_);
  for (auto& [key, known] : modules_) known.seen = false;
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
  }
  for (auto it = modules_.begin(); it != modules_.end();) {
    if (!it->second.seen) {
      metadata_.push(RecordType::kModuleUnload, ModuleUnloadRecord{it->second.id, relative(now)});
      it = modules_.erase(it);
    } else {
      ++it;
    }
  }
}

void Sampler::write_final_repeats(uint64_t now) {
  if (!config_.cpu_samples || paused_.load(std::memory_order_relaxed)) return;
  write_sleep_repeats(now);
}

void Sampler::write_sleep_repeats(uint64_t at) {
  for (auto& [tid, state] : visitor_.threads()) {
    const ThreadActivity& a = state.activity;
    // Its new stack not copied yet (reread_pacer.h): what it ran since its last sample, above
    // the stack it slept in before; no repeat of that stack past its wake.
    if (state.copy_deferred) {
      if (state.selected) encoder_.write_tail(tid, state);
      continue;
    }
    // A thread the kernel does not report on: asleep where it was last seen if its clock has
    // not moved since. (Its last check may be a second old: a dormant thread's.)
    if (!a.watched || a.resync) {
      if (unwatched_asleep_since_sample(state, at) &&
          visitor_.lister().cpu_time_ns(tid) == state.last_cpu_ns) {
        encoder_.write_repeat(tid, state, at, uint64_t{0});
      }
      continue;
    }
    // Woken since its last check (to end, often): asleep where it was until then only.
    if (state.selected && a.switched_on) {
      write_wait_end(tid, state, at);
      continue;
    }
    // Known asleep since its last check (the kernel's records): the time since is idle, exactly.
    if (state.selected && state.has_stack && state.self_handle < 0 && a.watched && !a.resync &&
        !a.on_cpu && !a.switched_on && state.last_record_ns < at) {
      encoder_.write_repeat(tid, state, at, uint64_t{0});
    }
  }
}

bool Sampler::unwatched_asleep_since_sample(const ThreadState& state, uint64_t at) const {
  const ThreadActivity& a = state.activity;
  return state.selected && state.has_stack && state.self_handle < 0 && (!a.watched || a.resync) &&
         state.last_cpu_ns && state.last_record_ns + period_ns() <= at;
}

}  // namespace inprof::internal
