// Continuous mode: a repeat record means "the thread's previous sample again", and the previous
// sample may lie in the window before. The writer passes every sample and repeat through this
// before writing it: a window's first repeat of a thread is written as a whole sample (the stack
// it repeats, with the repeat's time and CPU delta), so that each window's dump stands alone and
// no sample is lost at the boundary. Used by the writer thread only (it allocates).
#ifndef INPROF_LIB_WINDOW_REPEATS_H_
#define INPROF_LIB_WINDOW_REPEATS_H_

#include <cstdint>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dump/dump_records.h"

namespace inprof::internal {

class WindowRepeats {
 public:
  // A new window begins: no thread has a sample in it yet.
  void new_window();
  // A record drained from the ring, about to be written. Returns the payload to write in its
  // place, and sets *type: the record itself, or a whole sample for a window's first repeat.
  std::span<const uint8_t> pass(RecordType* type, std::span<const uint8_t> payload);
  // The thread ended: its stack is forgotten at the next window (its last samples may still be
  // on their way: the metadata is drained before the ring).
  void thread_ended(uint64_t tid) { ended_.push_back(tid); }

 private:
  std::unordered_map<uint64_t, std::vector<uint8_t>> last_stack_;  // by tid: a sample's stack
  std::unordered_set<uint64_t> sampled_;                           // threads sampled this window
  std::vector<uint64_t> ended_;
  std::vector<uint8_t> rebuilt_;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_WINDOW_REPEATS_H_
