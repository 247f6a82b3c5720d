#include "test_targets.h"

namespace symtest {
namespace {
volatile uintptr_t sink;
}

// Returns its own return address: an address inside the caller, after the call.
__attribute__((noinline)) uintptr_t capture_return_address() {
  uintptr_t r = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  sink = r;
  return r;
}

const int kLeafFunctionLine = __LINE__ + 1;
__attribute__((noinline)) int leaf_function(int x) {
  volatile int v = x;
  return v * 3 + 1;
}

const int kCallerFunctionLine = __LINE__ + 1;
__attribute__((noinline)) uintptr_t caller_function() {
  sink = static_cast<uintptr_t>(leaf_function(2));
  uintptr_t r = capture_return_address();  // kCallerCallLine
  sink = r;                                // keeps the call above from becoming a tail call
  return r;
}
const int kCallerCallLine = kCallerFunctionLine + 2;

const int kInlinedHelperLine = __LINE__ + 1;
__attribute__((always_inline)) inline uintptr_t inlined_helper() {
  uintptr_t r = capture_return_address();  // kInlinedCallLine
  sink = r;
  return r;
}
const int kInlinedCallLine = kInlinedHelperLine + 1;

__attribute__((noinline)) uintptr_t outer_with_inline() {
  uintptr_t r = inlined_helper();  // kOuterCallsHelperLine
  sink = r + 1;
  return r;
}
const int kOuterCallsHelperLine = __LINE__ - 4;

}  // namespace symtest

// Never executed: the address after a system call instruction stands for a thread blocked in
// the kernel, the address after two no-ops for one stopped in its own code.
#if defined(__x86_64__)
asm(".text\n"
    "  syscall\n"
    "symtest_after_syscall:\n"
    "  nop\n"
    "  nop\n"
    "symtest_after_plain_code:\n"
    "  ret\n");
#elif defined(__aarch64__)
asm(".text\n"
    "  svc #0\n"
    "symtest_after_syscall:\n"
    "  nop\n"
    "symtest_after_plain_code:\n"
    "  ret\n");
#endif

namespace symtest {

uintptr_t after_syscall_address() {
  uintptr_t a;
#if defined(__x86_64__)
  asm("lea symtest_after_syscall(%%rip), %0" : "=r"(a));
#elif defined(__aarch64__)
  asm("adr %0, symtest_after_syscall" : "=r"(a));
#endif
  return a;
}

uintptr_t after_plain_code_address() {
  uintptr_t a;
#if defined(__x86_64__)
  asm("lea symtest_after_plain_code(%%rip), %0" : "=r"(a));
#elif defined(__aarch64__)
  asm("adr %0, symtest_after_plain_code" : "=r"(a));
#endif
  return a;
}

}  // namespace symtest
