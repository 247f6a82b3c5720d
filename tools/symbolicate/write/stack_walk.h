// Reading stacks back out of a ProfileBuilder: for the folded and text-summary outputs.
#ifndef INPROF_TOOLS_SYMBOLICATE_STACK_WALK_H_
#define INPROF_TOOLS_SYMBOLICATE_STACK_WALK_H_

#include <optional>
#include <string>
#include <vector>

#include "convert/profile_builder.h"

namespace inprof::symbolicate {

// The stack's frames, outermost first (inlined frames included, each its own level).
std::vector<FrameIndex> frames_root_first(const ProfileBuilder& profile, StackIndex stack);

// The function name of a frame.
const std::string& frame_name(const ProfileBuilder& profile, FrameIndex frame);

// Whether a frame's code is the C or C++ runtime's (libc, libstdc++, the dynamic loader, ...).
bool in_language_runtime(const ProfileBuilder& profile, FrameIndex frame);

// Where a stack's program waited or called from (`frames` root first, its leaf a wait frame or
// an allocator): the index of the innermost frame below the leaf that is not the runtimes' own
// (futex_wait <- __lll_lock_wait <- ... says less than the function that took the lock); the
// root if every frame is. Null for a stack of one frame.
std::optional<size_t> program_frame_below_leaf(const ProfileBuilder& profile,
                                               const std::vector<FrameIndex>& frames);

// True if the stack's leaf frame is in the "Idle" category (a sample where the thread slept).
bool is_idle_leaf(const ProfileBuilder& profile, StackIndex stack);

// The rows of a thread's nativeAllocations table whose block is never freed in it, in row order:
// the viewer's "Retained Memory" (walking the rows, a free cancels the allocation at its
// address; a free matching nothing is ignored).
std::vector<size_t> retained_allocation_rows(const NativeAllocationTable& table);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_STACK_WALK_H_
