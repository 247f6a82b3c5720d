#include "self_sampling_router_linux.h"

#include <algorithm>

namespace inprof::internal {

SelfSamplingRouter::SelfSamplingRouter(std::unique_ptr<LinuxSelfSampling> timers,
                                       std::unique_ptr<PerfSelfSampling> perf)
    : timers_(std::move(timers)), perf_(std::move(perf)) {}

bool SelfSamplingRouter::valid(int handle) const {
  return handle >= 0 && static_cast<size_t>(handle) < kRoutes && routes_[handle].held &&
         routes_[handle].way != Way::kNone;
}

SelfSampling* SelfSamplingRouter::way(const Route& r) const {
  switch (r.way) {
    case Way::kTimer:
      return timers_.get();
    case Way::kPerf:
      return perf_.get();
    case Way::kNone:
      break;
  }
  return nullptr;
}

int SelfSamplingRouter::start(uint64_t tid, uint64_t sp, const LabelStack* labels) {
  int index = -1;
  for (size_t i = 0; i < kRoutes && index < 0; ++i) {
    if (!routes_[i].held) index = static_cast<int>(i);
  }
  if (index < 0) return -1;
  Route& r = routes_[index];
  r = Route{};
  r.tid = tid;
  r.sp = sp;
  r.labels = labels;
  // The kernel's copies carry label scopes' records, not the labels pushed without one.
  if (perf_ &&
      (labels == nullptr || labels->off_stack_since_ns.load(std::memory_order_relaxed) == 0)) {
    r.inner = perf_->start(tid, sp, nullptr);
    if (r.inner >= 0) r.way = Way::kPerf;
  }
  if (r.way == Way::kNone && !timer_refused(tid)) {
    r.inner = timers_->start(tid, sp, labels);
    if (r.inner >= 0) r.way = Way::kTimer;
  }
  if (r.way == Way::kNone) {
    const int refusal = r.inner == kAskAgainSoon ? kAskAgainSoon : -1;
    r = Route{};
    return refusal;
  }
  r.held = true;
  return index;
}

void SelfSamplingRouter::stop(int handle) {
  if (handle < 0 || static_cast<size_t>(handle) >= kRoutes) return;
  Route& r = routes_[handle];
  if (SelfSampling* w = way(r)) w->stop(r.inner);
  r = Route{};
}

void SelfSamplingRouter::note_timer_refusal(const Route& r) {
  if (r.way != Way::kTimer || !timers_->refused_for_alt_stack(r.inner) || timer_refused(r.tid)) {
    return;
  }
  timer_refused_tids_[next_timer_refused_] = r.tid;
  next_timer_refused_ = (next_timer_refused_ + 1) % kTimerRefusedTids;
}

bool SelfSamplingRouter::timer_refused(uint64_t tid) const {
  for (const uint64_t refused : timer_refused_tids_) {
    if (refused == tid) return true;
  }
  return false;
}

void SelfSamplingRouter::abandon(int handle) {
  if (handle < 0 || static_cast<size_t>(handle) >= kRoutes) return;
  Route& r = routes_[handle];
  note_timer_refusal(r);
  if (SelfSampling* w = way(r)) w->abandon(r.inner);
  r = Route{};
}

bool SelfSamplingRouter::still_allowed(int handle) {
  if (!valid(handle)) return false;  // lost its way (see set_labels): the sampler lets it go
  const Route& r = routes_[handle];
  note_timer_refusal(r);
  return way(r)->still_allowed(r.inner);
}

SelfSampling::CollectPeriod SelfSamplingRouter::collect_period(int handle) const {
  if (!valid(handle)) return CollectPeriod::kEveryTick;
  const Route& r = routes_[handle];
  // A ring whose thread waits to move to a timer (labels appeared) is read at every tick.
  if (r.way == Way::kPerf && r.pending_labels != nullptr) return CollectPeriod::kEveryTick;
  return way(r)->collect_period(r.inner);
}

bool SelfSamplingRouter::set_stack(int handle, uint64_t sp) {
  if (!valid(handle)) return false;
  Route& r = routes_[handle];
  r.sp = sp;
  return way(r)->set_stack(r.inner, sp);
}

bool SelfSamplingRouter::usable() {
  if (timers_usable_ && !timers_->usable()) {
    // The program installed its own handler for the signal: no timer may send it any more. The
    // threads that had one lose their way (still_allowed() says so); the kernel's sampling goes on.
    timers_usable_ = false;
    for (Route& r : routes_) {
      if (r.held && r.way == Way::kTimer) {
        timers_->stop(r.inner);
        r.way = Way::kNone;
        r.inner = -1;
      }
    }
  }
  return perf_ != nullptr || timers_usable_;
}

void SelfSamplingRouter::set_labels(int handle, const LabelStack* labels) {
  if (!valid(handle)) return;
  Route& r = routes_[handle];
  r.labels = labels;
  if (r.way == Way::kPerf) {
    // The kernel's copies hold the records of label scopes, not labels pushed without one: a
    // timer's handler, which reads the label stack, takes over once one appears.
    if (labels != nullptr && labels->off_stack_since_ns.load(std::memory_order_relaxed) != 0) {
      r.pending_labels = labels;
    }
    return;
  }
  way(r)->set_labels(r.inner, labels);
}

void SelfSamplingRouter::move_to_timer(Route& r) {
  // A thread whose alternate stack refused a timer keeps its ring, labels or depth notwithstanding.
  if (timer_refused(r.tid)) {
    r.pending_labels = nullptr;
    return;
  }
  Counts done = perf_->counts(r.inner);
  done.answered += r.before.answered;
  done.missed += r.before.missed;
  perf_->stop(r.inner);
  r.before = done;
  r.inner = timers_->start(r.tid, r.sp, r.pending_labels);
  r.way = r.inner >= 0 ? Way::kTimer : Way::kNone;
  r.left_ring = true;  // never back: its ring would cut its stack or miss its labels again
  r.pending_labels = nullptr;
}

void SelfSamplingRouter::try_move_to_ring(Route& r) {
  if (r.ring_try_countdown > 0) {
    --r.ring_try_countdown;
    return;
  }
  if (perf_->active() >= perf_->capacity() ||
      (r.labels != nullptr && r.labels->off_stack_since_ns.load(std::memory_order_relaxed) != 0)) {
    return;
  }
  const int inner = perf_->start(r.tid, r.sp, nullptr);
  if (inner < 0) {
    r.ring_refusals = std::min<uint32_t>(r.ring_refusals + 1, 10);
    r.ring_try_countdown = 1u << r.ring_refusals;
    return;
  }
  Counts done = timers_->counts(r.inner);
  done.answered += r.before.answered;
  done.missed += r.before.missed;
  timers_->stop(r.inner);  // read out: its queue was empty
  r.before = done;
  r.inner = inner;
  r.way = Way::kPerf;
}

const StackSnapshot* SelfSamplingRouter::front(int handle) {
  if (!valid(handle)) return nullptr;
  Route& r = routes_[handle];
  const StackSnapshot* snapshot = way(r)->front(r.inner);
  // Once its ring is read out: labels appeared, or its stack is deeper than the kernel copies.
  if (snapshot == nullptr && r.way == Way::kPerf &&
      (r.pending_labels != nullptr || perf_->too_deep(r.inner))) {
    move_to_timer(r);
  } else if (snapshot == nullptr && r.way == Way::kTimer && perf_ && !r.left_ring) {
    try_move_to_ring(r);  // rings given back since it got its timer
  }
  return snapshot;
}

void SelfSamplingRouter::note_walk(int handle, uint64_t bytes_used, bool cut) {
  if (!valid(handle)) return;
  const Route& r = routes_[handle];
  way(r)->note_walk(r.inner, bytes_used, cut);
}

void SelfSamplingRouter::pop(int handle) {
  if (!valid(handle)) return;
  const Route& r = routes_[handle];
  way(r)->pop(r.inner);
}

SelfSampling::Counts SelfSamplingRouter::counts(int handle) const {
  if (handle < 0 || static_cast<size_t>(handle) >= kRoutes) return {};
  const Route& r = routes_[handle];
  Counts total = r.before;
  if (const SelfSampling* w = way(r)) {
    const Counts now = w->counts(r.inner);
    total.answered += now.answered;
    total.missed += now.missed;
  }
  return total;
}

}  // namespace inprof::internal
