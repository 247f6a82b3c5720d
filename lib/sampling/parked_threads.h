// The threads a sampler's tick need not visit until a time: asleep at their last checks, backing
// off (their next check is due later), or not selected. A tick then costs what the threads that
// run cost, not what every thread of the process does (10,000 sleeping threads walked at every
// tick took most of the sampler's CPU, benchmarks/idle_threads).
//
// Entries are never removed early: one whose thread was woken (or ended, or parked again for
// another time) is recognised when it comes due by the caller's own state, and dropped.
#ifndef INPROF_LIB_PARKED_THREADS_H_
#define INPROF_LIB_PARKED_THREADS_H_

#include <cstdint>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

namespace inprof::internal {

class ParkedThreads {
 public:
  static constexpr uint64_t kUntilWoken = ~uint64_t(0);

  void park(uint64_t tid, uint64_t due_ns) { heap_.emplace(due_ns, tid); }

  // Calls `due(tid, due_ns)` for every entry due at `now`, earliest first, and forgets it.
  template <typename Due>
  void take_due(uint64_t now, Due&& due) {
    while (!heap_.empty() && heap_.top().first <= now) {
      const auto [due_ns, tid] = heap_.top();
      heap_.pop();
      due(tid, due_ns);
    }
  }

  // Entries, stale ones included (each thread parked once has at most one live entry).
  size_t size() const { return heap_.size(); }

  // Drops the stale entries once they outnumber the live ones `live(tid, due_ns)` keeps, so that
  // threads woken and parked again and again cannot grow the heap past twice the live count.
  template <typename Live>
  void compact_if_stale(size_t live_count, Live&& live) {
    if (heap_.size() <= 2 * live_count + 64) return;
    std::vector<Entry> kept;
    kept.reserve(live_count);
    while (!heap_.empty()) {
      if (live(heap_.top().second, heap_.top().first)) kept.push_back(heap_.top());
      heap_.pop();
    }
    heap_ = Heap(std::greater<Entry>(), std::move(kept));
  }

 private:
  using Entry = std::pair<uint64_t, uint64_t>;  // due time, tid
  using Heap = std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>>;
  Heap heap_;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_PARKED_THREADS_H_
