// A scripted Mach layer: threads with ports, registers, stacks (real memory of the test, so the
// copier's plain copy reads it as it would a thread's stack), CPU times and the error code each
// call should return. It counts every reference it hands out and takes back, every array, every
// suspension and resumption, and the allocations the calling thread makes while any thread is
// suspended (through the counting allocator linked into the test).
#ifndef INPROF_TESTS_MACOS_FAKE_MACH_API_H_
#define INPROF_TESTS_MACOS_FAKE_MACH_API_H_

#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../perf/counting_allocator.h"
#include "mach_api_macos.h"

namespace inprof::testing {

using internal::KernReturn;
using internal::kKernSuccess;
using internal::kRegisterCount;
using internal::MachPort;

struct FakeThread {
  uint64_t tid = 0;
  uint64_t regs[kRegisterCount] = {};
  internal::MachThreadTimes times;
  internal::MachStackBounds bounds;
  std::string name;
  KernReturn id_error = kKernSuccess;
  KernReturn times_error = kKernSuccess;
  KernReturn suspend_error = kKernSuccess;
  KernReturn get_state_error = kKernSuccess;
  KernReturn resume_error = kKernSuccess;
  int suspended = 0;  // suspensions not yet resumed
  int suspensions = 0;
};

class FakeMachApi final : public internal::MachApi {
 public:
  static constexpr uint64_t kSelfTid = 1;

  // Adds a thread; its port is 1000 + tid.
  FakeThread& add(uint64_t tid) {
    FakeThread& t = threads_[port_of(tid)];
    t.tid = tid;
    return t;
  }
  FakeThread& thread(uint64_t tid) { return threads_.at(port_of(tid)); }
  void remove(uint64_t tid) { threads_.erase(port_of(tid)); }
  static MachPort port_of(uint64_t tid) { return static_cast<MachPort>(1000 + tid); }

  // References handed out and not yet given back, over all ports.
  int outstanding_references() const {
    int n = 0;
    for (const auto& [port, count] : references_) n += count;
    return n;
  }
  int outstanding_arrays() const { return arrays_out_; }
  int suspended_now() const {
    int n = 0;
    for (const auto& [port, t] : threads_) n += t.suspended;
    return n;
  }
  int total_suspensions() const { return suspensions_; }
  uint64_t allocations_while_suspended() const { return allocations_while_suspended_; }
  bool state_read_before_first_suspend() const { return state_read_before_suspend_; }
  int deallocate_errors() const { return deallocate_errors_; }
  KernReturn task_threads_error = kKernSuccess;
  uint64_t mask = ~uint64_t{0};

  KernReturn task_threads(MachPort** threads, uint32_t* count) override {
    if (task_threads_error != kKernSuccess) return task_threads_error;
    auto* array = new MachPort[threads_.size() + 1];
    uint32_t n = 0;
    for (const auto& [port, t] : threads_) {
      array[n++] = port;
      ++references_[port];
    }
    ++arrays_out_;
    *threads = array;
    *count = n;
    return kKernSuccess;
  }
  void release_thread_array(MachPort* threads, uint32_t) override {
    --arrays_out_;
    delete[] threads;
  }
  void port_deallocate(MachPort port) override {
    auto it = references_.find(port);
    if (it == references_.end() || it->second == 0) {
      ++deallocate_errors_;
      return;
    }
    --it->second;
  }
  MachPort thread_self() override {
    ++references_[port_of(kSelfTid)];
    return port_of(kSelfTid);
  }
  uint64_t current_thread_id() override { return kSelfTid; }
  KernReturn thread_id(MachPort port, uint64_t* id) override {
    FakeThread* t = find(port);
    if (t == nullptr) return internal::kMachSendInvalidDest;
    if (t->id_error != kKernSuccess) return t->id_error;
    *id = t->tid;
    return kKernSuccess;
  }
  KernReturn thread_times(MachPort port, internal::MachThreadTimes* times) override {
    FakeThread* t = find(port);
    if (t == nullptr) return internal::kMachSendInvalidDest;
    if (t->times_error != kKernSuccess) return t->times_error;
    *times = t->times;
    return kKernSuccess;
  }
  bool thread_name(MachPort port, char* out, size_t size) override {
    FakeThread* t = find(port);
    if (t == nullptr || t->name.empty()) return false;
    std::strncpy(out, t->name.c_str(), size);
    return true;
  }
  internal::MachStackBounds stack_bounds(MachPort port) override {
    FakeThread* t = find(port);
    return t == nullptr ? internal::MachStackBounds{} : t->bounds;
  }
  uint64_t code_address_mask() override { return mask; }

  KernReturn thread_suspend(MachPort port) override {
    if (port == port_of(kSelfTid)) ++self_suspensions_;
    FakeThread* t = find(port);
    if (t == nullptr) return internal::kMachSendInvalidDest;
    if (t->suspend_error != kKernSuccess) return t->suspend_error;
    ++t->suspended;
    ++t->suspensions;
    ++suspensions_;
    counter_.emplace();
    return kKernSuccess;
  }
  KernReturn thread_get_state(MachPort port, uint64_t (&regs)[kRegisterCount]) override {
    if (suspensions_ == 0 && port == port_of(kSelfTid)) state_read_before_suspend_ = true;
    FakeThread* t = find(port);
    if (t == nullptr) return internal::kMachSendInvalidDest;
    if (t->get_state_error != kKernSuccess) return t->get_state_error;
    std::memcpy(regs, t->regs, sizeof(regs));
    return kKernSuccess;
  }
  uint64_t now_ns() override { return ++clock_; }
  KernReturn thread_resume(MachPort port) override {
    FakeThread* t = find(port);
    if (t == nullptr) return internal::kMachSendInvalidDest;
    if (counter_) {
      allocations_while_suspended_ += counter_->count();
      counter_.reset();
    }
    if (t->suspended > 0) --t->suspended;
    return t->resume_error;
  }
  int self_suspensions() const { return self_suspensions_; }

 private:
  FakeThread* find(MachPort port) {
    auto it = threads_.find(port);
    return it == threads_.end() ? nullptr : &it->second;
  }

  std::map<MachPort, FakeThread> threads_;
  std::map<MachPort, int> references_;
  int arrays_out_ = 0;
  int suspensions_ = 0;
  int self_suspensions_ = 0;
  int deallocate_errors_ = 0;
  bool state_read_before_suspend_ = false;
  uint64_t clock_ = 0;
  uint64_t allocations_while_suspended_ = 0;
  std::optional<CountAllocations> counter_;
};

}  // namespace inprof::testing

#endif  // INPROF_TESTS_MACOS_FAKE_MACH_API_H_
