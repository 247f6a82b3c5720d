#include "sampling/thread_names.h"

namespace inprof::internal {

ThreadNames& ThreadNames::instance() {
  // Leaked on purpose: threads may name themselves during static destruction.
  static ThreadNames* names = new ThreadNames;
  return *names;
}

void ThreadNames::set(uint64_t tid, std::string_view name) {
  std::lock_guard lock(mutex_);
  names_[tid] = std::string(name);
  generation_.fetch_add(1, std::memory_order_release);
}

std::optional<std::string> ThreadNames::get(uint64_t tid) const {
  std::lock_guard lock(mutex_);
  auto it = names_.find(tid);
  if (it == names_.end()) return std::nullopt;
  return it->second;
}

void ThreadNames::forget(uint64_t tid) {
  std::lock_guard lock(mutex_);
  names_.erase(tid);
  choices_.erase(tid);
}

void ThreadNames::choose(uint64_t tid, Choice choice) {
  std::lock_guard lock(mutex_);
  choices_[tid] = choice;
  generation_.fetch_add(1, std::memory_order_release);
}

ThreadNames::Choice ThreadNames::choice(uint64_t tid) const {
  std::lock_guard lock(mutex_);
  auto it = choices_.find(tid);
  return it == choices_.end() ? Choice::kFilters : it->second;
}

}  // namespace inprof::internal
