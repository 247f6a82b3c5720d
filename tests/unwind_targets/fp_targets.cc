// Code with frame pointers and classic `push rbp; mov rbp, rsp ... leave; ret` frames (built -O0
// -fno-omit-frame-pointer), sampled at every instruction: after `leave` the CFI still names the
// saved-FP slot, now below SP.
extern "C" {
extern volatile int unwind_target_ready;
extern volatile int unwind_target_release;

__attribute__((noinline)) unsigned target_fp_small_work(unsigned x) {
  unsigned a = x * 3u + 1u;
  return a ^ (a >> 3);
}

__attribute__((noinline)) void target_fp_loop() {
  volatile unsigned sink = 0;
  unwind_target_ready = 1;
  while (!unwind_target_release) sink = sink + target_fp_small_work(sink);
}
}
