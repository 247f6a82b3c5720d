// Functions whose addresses the tests put into dumps, so that symbolicate resolves real code of
// the test executable. Defined in test_targets.cc; kept out of line on purpose.
#ifndef INPROF_TESTS_SYMBOLICATE_TEST_TARGETS_H_
#define INPROF_TESTS_SYMBOLICATE_TEST_TARGETS_H_

#include <cstdint>

namespace symtest {

int leaf_function(int x);
// Calls leaf_function; returns the return address of a call made from inside it.
uintptr_t caller_function();
// Returns the return address of a call made from code inlined into it (inlined_helper).
uintptr_t outer_with_inline();

// Addresses in the test executable: right after a system call instruction, and right after
// ordinary instructions (x86-64 and aarch64 only).
uintptr_t after_syscall_address();
uintptr_t after_plain_code_address();

extern const int kLeafFunctionLine;      // line of leaf_function's definition
extern const int kCallerFunctionLine;    // line of caller_function's definition
extern const int kCallerCallLine;        // line of the call inside caller_function
extern const int kInlinedHelperLine;     // line of inlined_helper's definition
extern const int kInlinedCallLine;       // line of the call inside inlined_helper
extern const int kOuterCallsHelperLine;  // line in outer_with_inline that calls inlined_helper

}  // namespace symtest

#endif  // INPROF_TESTS_SYMBOLICATE_TEST_TARGETS_H_
