#include "unwind/frame_pointer_unwinder.h"

namespace inprof::internal {

UnwindOutput FramePointerUnwinder::unwind(const StackSnapshot& snapshot, std::span<uint64_t> frames,
                                          std::span<uint64_t> stack_pointers) {
  const bool want_sps = stack_pointers.size() >= frames.size();
  UnwindOutput out;
  out.frame_pointer_walk = true;
  if (frames.empty()) {
    out.result = UnwindResult::kDepthLimit;
    return out;
  }
  if (want_sps) stack_pointers[0] = snapshot.sp();
  frames[out.count++] = snapshot.pc();
  if (!snapshot.stack_found) return out;

  uint64_t fp = snapshot.fp();
  uint64_t lowest = snapshot.sp();  // every frame record lies above SP, each above the last
  while (true) {
    if (fp == 0) {  // the outermost frame (thread start, _start) clears FP
      out.reached_end = true;
      break;
    }
    if (fp < lowest || (fp & 7) != 0) break;  // not a frame record: the chain ends here
    uint64_t next_fp, return_address;
    if (!snapshot.read_word(fp, &next_fp) || !snapshot.read_word(fp + 8, &return_address)) {
      if (snapshot.stack_truncated && fp >= snapshot.stack_end() - 8) {
        out.result = UnwindResult::kTruncated;
      }
      break;
    }
    return_address = code_address(return_address);
    if (return_address == 0) break;
    if (out.count == frames.size()) {
      out.result = UnwindResult::kDepthLimit;
      break;
    }
    if (want_sps) stack_pointers[out.count] = fp + kFrameRecordSize;
    frames[out.count++] = return_address;
    if (next_fp == 0) {
      out.reached_end = true;
      break;
    }
    if (next_fp <= fp) break;  // records must move up the stack, or we would loop
    lowest = fp + kFrameRecordSize;
    fp = next_fp;
  }
  return out;
}

}  // namespace inprof::internal
