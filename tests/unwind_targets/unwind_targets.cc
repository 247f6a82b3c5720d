#include "unwind_targets.h"

#include <pthread.h>
#include <signal.h>
#include <ucontext.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

extern "C" {
volatile int unwind_target_ready = 0;
volatile int unwind_target_release = 0;
}

namespace {
// Keeps a call from being turned into a jump, so every level keeps its frame.
#define NO_TAIL_CALL() asm volatile("" ::: "memory")

void spin_until_released() {
  unwind_target_ready = 1;
  while (!unwind_target_release) {
  }
}
}  // namespace

extern "C" {

__attribute__((noinline)) void target_leaf_spin() {
  unwind_target_ready = 1;
  while (!unwind_target_release) {
  }
}

__attribute__((noinline)) void target_recurse(int depth) {
  if (depth > 0) {
    target_recurse(depth - 1);
  } else {
    target_leaf_spin();
  }
  NO_TAIL_CALL();
}

__attribute__((noinline)) int target_compare_spin(const void* a, const void* b) {
  spin_until_released();
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

__attribute__((noinline)) void target_qsort() {
  int values[] = {3, 1, 2};
  qsort(values, 3, sizeof(int), target_compare_spin);
  NO_TAIL_CALL();
}

__attribute__((noinline)) bool target_less_spin(int a, int b) {
  spin_until_released();
  return a < b;
}

__attribute__((noinline)) void target_std_sort() {
  std::vector<int> values = {5, 3, 9, 1, 7, 2, 8, 6, 4, 0, 11, 15, 13, 12, 14, 10, 17};
  std::sort(values.begin(), values.end(), target_less_spin);
  NO_TAIL_CALL();
}

__attribute__((noinline)) void target_once_spin() { spin_until_released(); }

__attribute__((noinline)) void target_pthread_once() {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, target_once_spin);
  NO_TAIL_CALL();
}

__attribute__((noinline)) void target_signal_spin(int) { spin_until_released(); }

__attribute__((noinline)) void target_signal() {
  struct sigaction sa = {};
  sa.sa_handler = target_signal_spin;
  sigaction(SIGUSR2, &sa, nullptr);
  pthread_kill(pthread_self(), SIGUSR2);
  NO_TAIL_CALL();
}

#if defined(__x86_64__)
// Two functions back to back; the second faults at its first byte (ud2), so the PC the signal
// interrupts is a function's entry, one byte past the end of another function.
asm(R"(
    .text
    .p2align 4
    .globl target_before_entry
    .type target_before_entry, @function
target_before_entry:
    .cfi_startproc
    ret
    .cfi_endproc
    .size target_before_entry, .-target_before_entry
    .globl target_faults_at_entry
    .type target_faults_at_entry, @function
target_faults_at_entry:
    .cfi_startproc
    ud2
    ret
    .cfi_endproc
    .size target_faults_at_entry, .-target_faults_at_entry
)");

__attribute__((noinline)) void target_entry_fault_spin(int, siginfo_t*, void* context) {
  spin_until_released();
  static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP] += 2;  // past the ud2
}

__attribute__((noinline)) void target_signal_at_entry() {
  struct sigaction sa = {};
  sa.sa_sigaction = target_entry_fault_spin;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGILL, &sa, nullptr);
  target_faults_at_entry();
  NO_TAIL_CALL();
}
#endif

// Enough live values that the function saves callee-saved registers: a real prologue and
// epilogue around a little work, so samples land on every kind of instruction.
__attribute__((noinline)) int target_small_work(int x) {
  // Unsigned: the arithmetic wraps by design.
  unsigned a = x * 3u, b = x ^ 0x55u, c = x + 7u, d = unsigned(x) * unsigned(x), e = x - 9u,
           f = unsigned(x) << 3;
  for (int i = 0; i < 3; ++i) {
    a += b * c;
    b ^= d + e;
    c -= f;
    asm volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f));
  }
  return static_cast<int>(a + b + c + d + e + f);
}

__attribute__((noinline)) void target_prologue_loop() {
  volatile int sink = 0;
  unwind_target_ready = 1;
  while (!unwind_target_release) sink = sink + target_small_work(sink);
  NO_TAIL_CALL();
}

}  // extern "C"
