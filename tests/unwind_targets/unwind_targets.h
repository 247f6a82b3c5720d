// Functions with known call chains, built -O2 -fomit-frame-pointer into their own shared library,
// so that tests can compare unwound stacks with the truth. Each target runs on a thread of the
// test, sets `unwind_target_ready` once it is where the test expects it, and stays there until
// `unwind_target_release` is set.
#ifndef INPROF_TESTS_UNWIND_TARGETS_H_
#define INPROF_TESTS_UNWIND_TARGETS_H_

extern "C" {
extern volatile int unwind_target_ready;
extern volatile int unwind_target_release;

void target_leaf_spin();         // spins in place
void target_recurse(int depth);  // target_recurse × depth+1, then target_leaf_spin
void target_qsort();             // qsort → target_compare_spin
void target_std_sort();          // std::sort → target_less_spin
void target_pthread_once();      // pthread_once → target_once_spin
void target_signal();            // raise SIGUSR2 → target_signal_spin (in the handler)
#if defined(__x86_64__)
// target_faults_at_entry faults at its first byte, right after target_before_entry's last:
// the SIGILL handler target_entry_fault_spin spins there.
void target_signal_at_entry();
void target_before_entry();
void target_faults_at_entry();
#endif
void target_prologue_loop();  // calls target_small_work in a loop
int target_small_work(int x);
void target_fp_loop();  // -O0 frame-pointer frames: calls target_fp_small_work
unsigned target_fp_small_work(unsigned x);
}

#endif  // INPROF_TESTS_UNWIND_TARGETS_H_
