// Which way a busy thread samples itself on Linux: by the kernel (PerfSelfSampling: full rate,
// nothing delivered to the thread) where the kernel allows it and the thread has no labels to
// copy, else by its CPU-time timer's signal (LinuxSelfSampling). A thread whose first label
// appears while the kernel samples it, or whose stack turns out deeper than the kernel copies
// (when Options::stack_copy_size asks for more), is moved to a timer once its ring is read out.
//
// INPROF_SELF_SAMPLING=timer keeps to timers (to compare, or where perf events are unwelcome).
#ifndef INPROF_PLATFORM_LINUX_SELF_SAMPLING_ROUTER_LINUX_H_
#define INPROF_PLATFORM_LINUX_SELF_SAMPLING_ROUTER_LINUX_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "perf_self_sampling_linux.h"
#include "sampling/self_sampling.h"
#include "self_sampling_linux.h"

namespace inprof::internal {

class SelfSamplingRouter final : public SelfSampling {
 public:
  // `perf` may be null (refused by the kernel, or not wanted).
  SelfSamplingRouter(std::unique_ptr<LinuxSelfSampling> timers,
                     std::unique_ptr<PerfSelfSampling> perf);

  LinuxSelfSampling& timers() { return *timers_; }

  int start(uint64_t tid, uint64_t sp, const LabelStack* labels) override;
  void stop(int handle) override;
  void abandon(int handle) override;
  bool still_allowed(int handle) override;
  bool set_stack(int handle, uint64_t sp) override;
  bool usable() override;
  void set_labels(int handle, const LabelStack* labels) override;
  const StackSnapshot* front(int handle) override;
  void note_walk(int handle, uint64_t bytes_used, bool cut) override;
  void pop(int handle) override;
  Counts counts(int handle) const override;
  Capabilities capabilities() const override {
    return perf_ ? perf_->capabilities() : Capabilities{};
  }
  bool wait(uint64_t timeout_ns) override { return perf_ && perf_->wait(timeout_ns); }
  void interrupt_wait() override {
    if (perf_) perf_->interrupt_wait();
  }
  // Full when neither a ring nor a timer is free (or, without timers, every route is held).
  bool full() const override {
    if (timers_) return (!timers_usable_ || timers_->full()) && (!perf_ || perf_->full());
    for (const Route& r : routes_) {
      if (!r.held) return false;
    }
    return true;
  }
  CollectPeriod collect_period(int handle) const override;

 private:
  enum class Way : uint8_t { kNone, kTimer, kPerf };
  struct Route {
    bool held = false;  // the sampler holds this handle (even with no way left)
    Way way = Way::kNone;
    int inner = -1;
    uint64_t tid = 0;
    uint64_t sp = 0;
    Counts before;  // the counts of earlier ways, so that totals never go back
    // Labels without records appeared while the kernel sampled it (the C API's): a timer takes
    // over once its ring is empty.
    const LabelStack* pending_labels = nullptr;
    const LabelStack* labels = nullptr;  // as last given (a timer's handler reads them)
    // A timer route asks for a ring when one may be free (a timer sees bursts shorter than the
    // scheduler tick only by chance), less often after each refusal.
    uint32_t ring_refusals = 0;
    uint32_t ring_try_countdown = 0;
    bool left_ring = false;  // moved to a timer (too deep for the kernel's copy, or labels)
  };
  static constexpr size_t kRoutes = kMaxSelfSampledThreads + kMaxPerfThreads;
  // Threads whose timer was given up for their alternate stack, remembered (the most recent ones)
  // so that they never get another: a ring may still take them.
  static constexpr size_t kTimerRefusedTids = 256;
  bool valid(int handle) const;
  SelfSampling* way(const Route& r) const;
  void move_to_timer(Route& r);
  void try_move_to_ring(Route& r);
  void note_timer_refusal(const Route& r);
  bool timer_refused(uint64_t tid) const;

  std::unique_ptr<LinuxSelfSampling> timers_;
  std::unique_ptr<PerfSelfSampling> perf_;
  bool timers_usable_ = true;
  Route routes_[kRoutes];
  uint64_t timer_refused_tids_[kTimerRefusedTids] = {};
  size_t next_timer_refused_ = 0;
};

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_SELF_SAMPLING_ROUTER_LINUX_H_
