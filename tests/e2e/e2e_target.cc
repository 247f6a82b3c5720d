// The end-to-end test's program: three threads with known call chains, profiled into argv[1].
//   busy:    busy_outer -> busy_middle -> busy_inner     computes for about 1.5 s
//   sleeper: sleeper_outer -> sleeper_wait -> (nap)      sleeps until busy is done
//   main:    main -> main_work -> main_spin              alternates short work and short sleeps
// check_e2e.mjs then looks for exactly these chains in the symbolicated profile.
//
// Every function is noinline and does something after each call, so the compiler can neither
// inline it nor turn the call into a tail jump: each one keeps a frame of its own.
#include <inprof/profiler.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <thread>

#define E2E_NOINLINE __attribute__((noinline))
// Keeps the caller's frame live after a call (no tail call) and the work from being optimised out.
#define E2E_BARRIER() asm volatile("" ::: "memory")

namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kBusyTime = std::chrono::milliseconds(1500);

std::atomic<bool> busy_done{false};
volatile unsigned long sink;

}  // namespace

// Global functions with plain names: the check matches demangled names such as "busy_inner()".

E2E_NOINLINE void busy_inner() {
  Clock::time_point deadline = Clock::now() + kBusyTime;
  do {
    // Long stretches of pure computation between clock reads, so nearly every sample lands here
    // rather than in the (frame-pointer-less) clock code.
    for (unsigned long i = 0; i < 2'000'000; ++i) sink = sink + i;
  } while (Clock::now() < deadline);
  E2E_BARRIER();
}

E2E_NOINLINE void busy_middle() {
  busy_inner();
  E2E_BARRIER();
}

E2E_NOINLINE void busy_outer() {
  busy_middle();
  E2E_BARRIER();
}

// Sleeps in the kernel. libc has no frame pointers, so a frame-pointer walk from inside
// nanosleep resumes at the return address saved in the frame of the innermost function that has
// one, this one: sleeper_nap itself is usually missing from the stack, but its caller,
// sleeper_wait, is always found. (main_spin is missed the same way; the check asks only for
// main -> main_work.)
E2E_NOINLINE void sleeper_nap() {
  timespec nap{0, 5'000'000};  // 5 ms
  nanosleep(&nap, nullptr);    // EINTR from the sampling signal just ends this nap early
  E2E_BARRIER();
}

E2E_NOINLINE void sleeper_wait() {
  while (!busy_done.load(std::memory_order_acquire)) sleeper_nap();
  E2E_BARRIER();
}

E2E_NOINLINE void sleeper_outer() {
  sleeper_wait();
  E2E_BARRIER();
}

E2E_NOINLINE void main_spin(int rounds) {
  for (int r = 0; r < rounds; ++r) {
    for (unsigned long i = 0; i < 500'000; ++i) sink = sink + i;
    timespec nap{0, 10'000'000};  // 10 ms
    nanosleep(&nap, nullptr);
  }
  E2E_BARRIER();
}

E2E_NOINLINE void main_work() {
  main_spin(50);
  E2E_BARRIER();
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT.inprof\n", argv[0]);
    return 2;
  }
  inprof::Options options;
  options.output_path = argv[1];
  if (inprof::Status status = inprof::Profiler::start(options); !status) {
    std::fprintf(stderr, "e2e_target: start failed: %s\n", status.message().c_str());
    return 1;
  }

  std::thread sleeper([] {
    inprof::set_thread_name("sleeper");
    pthread_setname_np(pthread_self(), "sleeper");
    sleeper_outer();
  });
  std::thread busy([] {
    inprof::set_thread_name("busy");
    pthread_setname_np(pthread_self(), "busy");
    busy_outer();
    busy_done.store(true, std::memory_order_release);
  });

  main_work();
  busy.join();
  sleeper.join();

  if (inprof::Status status = inprof::Profiler::stop(); !status) {
    std::fprintf(stderr, "e2e_target: stop failed: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}
