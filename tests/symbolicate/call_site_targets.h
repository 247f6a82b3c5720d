// Calls whose return address and call instruction lie on different source lines or in different
// inline levels: symbolicate must describe a caller by its call, not by what follows it. Defined
// in call_site_targets.cc, which is always compiled -O2 -g (the layouts below are -O2's).
#ifndef INPROF_TESTS_SYMBOLICATE_CALL_SITE_TARGETS_H_
#define INPROF_TESTS_SYMBOLICATE_CALL_SITE_TARGETS_H_

#include <cstdint>

namespace callsite {

// The return address of a call in call_then_next_line(), whose next statement is on the
// following line.
uintptr_t call_then_next_line();
extern const int kCallLine;  // the call's line in call_then_next_line()

// The return address of a call that is the last instruction of an inlined function
// (inlined_tail_call): the return address is in outer_after_inline's own code, the call in the
// inlinee.
uintptr_t outer_after_inline();
extern const int kOuterCallsInlineeLine;  // the line in outer_after_inline calling the inlinee
extern const int kInlineeCallLine;        // the call's line inside inlined_tail_call

}  // namespace callsite

#endif  // INPROF_TESTS_SYMBOLICATE_CALL_SITE_TARGETS_H_
