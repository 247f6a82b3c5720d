// What a program declares once and every session's dump must describe: categories, marker types
// and counters. Declarations outlive sessions; while a session runs, each new declaration is
// also written to its dump, and a starting session receives all earlier ones.
#ifndef INPROF_LIB_DECLARATIONS_H_
#define INPROF_LIB_DECLARATIONS_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "dump/dump_records.h"
#include "inprof/markers.h"
#include "session/metadata_queue.h"

namespace inprof::internal {

class Declarations {
 public:
  static Declarations& instance();

  uint16_t define_category(std::string_view name, Color color);
  uint32_t register_marker_type(const MarkerSchemaDescription& schema);
  // Returns the counter's id and its value cell (never freed).
  std::pair<uint32_t, std::atomic<int64_t>*> register_counter(std::string_view name,
                                                              std::string_view description,
                                                              uint16_t category);
  struct CounterCell {
    uint32_t id;
    std::atomic<int64_t>* value;
  };
  // The counters now registered (for the sampler, which reads their values every tick).
  std::vector<CounterCell> counters() const;
  // Number of counters ever registered: a cheap way to notice new ones.
  size_t counter_count() const { return counter_count_.load(std::memory_order_acquire); }

  // A session starts: every declaration so far goes to `queue`, and new ones will too.
  void attach(MetadataQueue* queue);
  void detach();

  // Held across fork() so that the child never inherits it locked by a thread it does not have.
  std::mutex& mutex() { return mutex_; }

 private:
  Declarations();

  mutable std::mutex mutex_;
  std::vector<CategoryRecord> categories_;
  std::vector<MarkerSchemaRecord> marker_types_;
  std::vector<CounterRecord> counter_records_;
  std::deque<std::atomic<int64_t>> counter_values_;  // stable addresses
  std::atomic<size_t> counter_count_{0};
  MetadataQueue* queue_ = nullptr;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_DECLARATIONS_H_
