// Walks the chain of frame records ({saved FP, return address}) through the stack copy. Exact
// and cheap where code keeps frame pointers; it stops at the first function that does not.
#ifndef INPROF_LIB_FRAME_POINTER_UNWINDER_H_
#define INPROF_LIB_FRAME_POINTER_UNWINDER_H_

#include "unwind/unwinder.h"

namespace inprof::internal {

class FramePointerUnwinder final : public Unwinder {
 public:
  UnwindOutput unwind(const StackSnapshot& snapshot, std::span<uint64_t> frames,
                      std::span<uint64_t> stack_pointers = {}) override;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_FRAME_POINTER_UNWINDER_H_
