// Reading stacks back out of a ProfileBuilder: for the folded and text-summary outputs.
#ifndef INPROF_TOOLS_SYMBOLICATE_STACK_WALK_H_
#define INPROF_TOOLS_SYMBOLICATE_STACK_WALK_H_

#include <string>
#include <vector>

#include "convert/profile_builder.h"

namespace inprof::symbolicate {

// The stack's frames, outermost first (inlined frames included, each its own level).
std::vector<FrameIndex> frames_root_first(const ProfileBuilder& profile, StackIndex stack);

// The function name of a frame.
const std::string& frame_name(const ProfileBuilder& profile, FrameIndex frame);

// True if the stack's leaf frame is in the "Idle" category (a sample where the thread slept).
bool is_idle_leaf(const ProfileBuilder& profile, StackIndex stack);

// The rows of a thread's nativeAllocations table whose block is never freed in it, in row order:
// the viewer's "Retained Memory" (walking the rows, a free cancels the allocation at its
// address; a free matching nothing is ignored).
std::vector<size_t> retained_allocation_rows(const NativeAllocationTable& table);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_STACK_WALK_H_
