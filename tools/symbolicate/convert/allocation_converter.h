// Sampled allocations into the profile (docs/design/allocations.md, section 5): each thread's
// nativeAllocations table, with each free written into the table of the thread that allocated
// the block (the viewer matches frees to allocations by address, within one table), and a
// "Memory" counter of the estimated live bytes.
#ifndef INPROF_TOOLS_SYMBOLICATE_ALLOCATION_CONVERTER_H_
#define INPROF_TOOLS_SYMBOLICATE_ALLOCATION_CONVERTER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>

#include "convert/profile_builder.h"
#include "read/profile_model.h"

namespace inprof::symbolicate {

struct AllocationFacts {
  uint64_t allocations = 0;      // rows with weight > 0
  uint64_t matched_frees = 0;    // frees written against their allocation
  uint64_t unmatched_frees = 0;  // frees whose allocation is not in the dump (dropped)
  uint64_t synthetic_frees = 0;  // an address allocated again while still live (free untracked)
  int64_t retained_bytes = 0;    // estimated bytes still live at the end
};

// `thread_of`: the profile thread a dump tid went to (none: its rows are left out).
// `stack_for`: the profile stack of a raw stack at a time.
AllocationFacts convert_allocations(
    const ProfileModel& model, const std::unordered_map<uint64_t, ThreadIndex>& thread_of,
    const std::function<std::optional<StackIndex>(RawStackId, uint64_t)>& stack_for,
    ProfileBuilder& builder, Counter* memory);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_ALLOCATION_CONVERTER_H_
