// Turns a StackSnapshot into a list of frames. Unwinders run on the copy, after the thread has
// resumed: they may take their time but must never read the live stack.
#ifndef INPROF_LIB_UNWINDER_H_
#define INPROF_LIB_UNWINDER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "sampling/module_lister.h"
#include "unwind/stack_snapshot.h"

namespace inprof::internal {

enum class UnwindResult {
  kComplete,    // reached the outermost frame (or the end of the frame chain)
  kTruncated,   // the chain continues beyond the copied stack
  kDepthLimit,  // `frames` was full
};

struct UnwindOutput {
  size_t count = 0;  // frames written: [0] is the PC, then return addresses
  UnwindResult result = UnwindResult::kComplete;
  bool frame_pointer_walk = false;  // the leaf's caller may be missing (see dump FORMAT.md)
  bool reached_end = false;         // the outermost frame was recognised (thread start, _start)
};

class Unwinder {
 public:
  virtual ~Unwinder() = default;
  // Writes frames (and, when `stack_pointers` is given, the SP of each frame: where its frame
  // begins, to place labels) and says how the walk ended.
  virtual UnwindOutput unwind(const StackSnapshot& snapshot, std::span<uint64_t> frames,
                              std::span<uint64_t> stack_pointers = {}) = 0;
  // The modules mapped now; called when they change, never while a thread is stopped.
  virtual void set_modules(const std::vector<ModuleInfo>&) {}
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_UNWINDER_H_
