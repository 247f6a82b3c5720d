#include "call_site_targets.h"

namespace callsite {
namespace {
volatile uintptr_t sink;

// Returns its own return address: the instruction after the call in its caller.
__attribute__((noinline)) uintptr_t return_address() {
  uintptr_t r = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  sink = r;
  return r;
}
}  // namespace

const int kCallLine = __LINE__ + 3;
__attribute__((noinline)) uintptr_t call_then_next_line() {
  sink = 1;
  uintptr_t r = return_address();
  sink = 2;  // the return address is this statement's first instruction
  return r;
}

const int kInlineeCallLine = __LINE__ + 3;
__attribute__((always_inline)) inline uintptr_t inlined_tail_call() {
  sink = 3;
  return return_address();  // the inlinee's last instruction
}

const int kOuterCallsInlineeLine = __LINE__ + 2;
__attribute__((noinline)) uintptr_t outer_after_inline() {
  uintptr_t r = inlined_tail_call();
  sink = 4;  // outer_after_inline's own code: where the call returns to
  return r;
}

}  // namespace callsite
