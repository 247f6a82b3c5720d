// Names given with inprof::set_thread_name(), by thread id. They outlive sessions, and win over
// the OS's names. Not used on the sampling hot path (a change bumps a counter the sampler polls).
#ifndef INPROF_LIB_THREAD_NAMES_H_
#define INPROF_LIB_THREAD_NAMES_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace inprof::internal {

class ThreadNames {
 public:
  static ThreadNames& instance();

  void set(uint64_t tid, std::string_view name);
  std::optional<std::string> get(uint64_t tid) const;
  void forget(uint64_t tid);

  // register_thread / unregister_thread: sampled whatever the filters say, or never.
  enum class Choice { kFilters, kAlways, kNever };
  void choose(uint64_t tid, Choice choice);
  Choice choice(uint64_t tid) const;
  // Changes whenever a name is set: a cheap way to notice renames.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // Held across fork() (see Declarations::mutex).
  std::mutex& mutex() { return mutex_; }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<uint64_t, std::string> names_;
  std::unordered_map<uint64_t, Choice> choices_;
  std::atomic<uint64_t> generation_{0};
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_THREAD_NAMES_H_
