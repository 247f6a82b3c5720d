// Stacks the unwinder must not trust: garbage and cyclic frame pointers, a stack pointer into
// unmapped, inaccessible or foreign memory, and a thread running a few KiB above its guard page.
// Everything here is x86-64 inline assembly: the compiler must not know what we do to RSP/RBP.
#include <pthread.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "torture.h"

#if !defined(__x86_64__)
#error "the stack torture scenarios are written for x86-64"
#endif

namespace {

// Spins `iterations` times with RBP = `bad`. 128 bytes are skipped first so that the push does
// not clobber a red zone. Returns the counter so the loop is observable.
__attribute__((noinline)) uint64_t spin_with_rbp(uint64_t bad, uint64_t iterations) {
  asm volatile(
      "sub $128, %%rsp\n\t"
      "push %%rbp\n\t"
      "mov %[bad], %%rbp\n\t"
      "1: sub $1, %[n]\n\t"
      "jnz 1b\n\t"
      "pop %%rbp\n\t"
      "add $128, %%rsp\n\t"
      : [n] "+r"(iterations)
      : [bad] "r"(bad)
      : "memory", "cc");
  return iterations;
}

// Spins with RSP = `bad_sp` (and RBP garbage). Nothing may touch the stack meanwhile: no call,
// no push. A signal can only be delivered on a sigaltstack then.
__attribute__((noinline)) uint64_t spin_with_rsp(uint64_t bad_sp, uint64_t iterations) {
  asm volatile(
      "mov %%rsp, %%r12\n\t"
      "mov %%rbp, %%r13\n\t"
      "mov %[sp], %%rsp\n\t"
      "mov %[sp], %%rbp\n\t"
      "1: sub $1, %[n]\n\t"
      "jnz 1b\n\t"
      "mov %%r12, %%rsp\n\t"
      "mov %%r13, %%rbp\n\t"
      : [n] "+r"(iterations)
      : [sp] "r"(bad_sp)
      : "r12", "r13", "memory", "cc");
  return iterations;
}

void install_altstack(std::vector<char>& storage) {
  storage.resize(256 * 1024);
  stack_t ss = {};
  ss.ss_sp = storage.data();
  ss.ss_size = storage.size();
  TT_CHECK(sigaltstack(&ss, nullptr) == 0, "sigaltstack: %s", strerror(errno));
}

void remove_altstack() {
  stack_t off = {};
  off.ss_flags = SS_DISABLE;
  sigaltstack(&off, nullptr);
}

// An address nothing can be mapped at: below vm.mmap_min_addr (64 KiB by default), which the
// kernel reserves. (A hole between mappings does not stay one: the next mmap fills it.)
uint64_t unmapped_address() {
  unsigned long min_addr = 4096;
  if (FILE* f = std::fopen("/proc/sys/vm/mmap_min_addr", "r")) {
    if (std::fscanf(f, "%lu", &min_addr) != 1) min_addr = 4096;
    std::fclose(f);
  }
  return (min_addr / 2) & ~uint64_t(15);
}

void assert_unmapped(uint64_t address) {
  unsigned char v;
  TT_CHECK(mincore(reinterpret_cast<void*>(address & ~uint64_t(4095)), 4096, &v) == -1 &&
               errno == ENOMEM,
           "the test's unmapped address %#llx got mapped", (unsigned long long)address);
}

constexpr uint64_t kSpin = 2000000;  // about a millisecond per spin

}  // namespace

// Garbage and cyclic frame pointers on two threads; a third spins with RSP in unmapped,
// inaccessible, read-only, kernel and heap memory (with a sigaltstack, the one way any signal can
// reach such a thread).
TORTURE_SCENARIO(corrupt_frames) {
  void* none = mmap(nullptr, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  TT_CHECK(none != MAP_FAILED, "mmap");
  const uint64_t unmapped = unmapped_address();
  std::vector<uint64_t> garbage(8192);
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = torture::mix(i, 3);
  std::vector<uint64_t> heap_cycle(64);
  for (size_t i = 0; i < heap_cycle.size(); i += 2) {
    heap_cycle[i] = reinterpret_cast<uint64_t>(&heap_cycle[(i + 2) % heap_cycle.size()]);
    heap_cycle[i + 1] = reinterpret_cast<uint64_t>(&spin_with_rbp) + 4;  // a "return address"
  }

  torture::start(ctx);
  torture::Deadline deadline(ctx.seconds);
  std::atomic<uint64_t> spins{0};
  auto rbp_thread = [&](int which) {
    // A frame on this very stack that points to itself, and one pointing downwards.
    volatile uint64_t frames[4];
    frames[0] = reinterpret_cast<uint64_t>(&frames[0]);
    frames[1] = reinterpret_cast<uint64_t>(&spin_with_rbp) + 4;
    frames[2] = reinterpret_cast<uint64_t>(&frames[0]) - 4096;
    frames[3] = reinterpret_cast<uint64_t>(&spin_with_rbp) + 4;
    const uint64_t bad[] = {
        0,
        1,
        0xdeadbeef,
        0x00007ffffffff000,                // top of user space, unmapped
        0xffff800000000000,                // kernel half
        0x8000000000000000,                // non-canonical
        reinterpret_cast<uint64_t>(none),  // PROT_NONE
        unmapped,
        reinterpret_cast<uint64_t>(&frames[0]),            // cycle of one frame
        reinterpret_cast<uint64_t>(&frames[2]),            // chain going downwards
        reinterpret_cast<uint64_t>(&frames[0]) + 3,        // misaligned, on the stack
        reinterpret_cast<uint64_t>(heap_cycle.data()),     // cycle on the heap
        reinterpret_cast<uint64_t>(garbage.data() + 100),  // random words
        reinterpret_cast<uint64_t>(&spin_with_rbp),        // code
    };
    for (uint64_t i = which; !deadline.passed(); ++i) {
      const uint64_t left = spin_with_rbp(bad[i % std::size(bad)], kSpin);
      TT_CHECK(left == 0, "spin loop broken");
      spins.fetch_add(1);
    }
  };
  std::thread rbp1(rbp_thread, 0), rbp2(rbp_thread, 5);
  std::thread rsp_thread([&] {
    std::vector<char> alt;
    install_altstack(alt);
    const uint64_t bad_sp[] = {
        unmapped,
        reinterpret_cast<uint64_t>(none) + (512 << 10),     // PROT_NONE
        reinterpret_cast<uint64_t>(&spin_with_rsp) + 64,    // read-only code
        0xffff800000001000,                                 // kernel half
        reinterpret_cast<uint64_t>(garbage.data() + 4096),  // heap with random words
    };
    for (uint64_t i = 0; !deadline.passed(); ++i) {
      if (i % std::size(bad_sp) == 0) assert_unmapped(unmapped);
      const uint64_t left = spin_with_rsp(bad_sp[i % std::size(bad_sp)], kSpin);
      TT_CHECK(left == 0, "spin loop broken");
      spins.fetch_add(1);
    }
    remove_altstack();
  });
  // A user-space "coroutine" stack: RSP in a heap buffer, no sigaltstack needed since it is
  // writable; RBP garbage.
  std::thread coroutine([&] {
    std::vector<uint64_t> coro(16384);
    for (size_t i = 0; i < coro.size(); ++i) coro[i] = torture::mix(i + 77, 2);
    for (uint64_t i = 0; !deadline.passed(); ++i) {
      const uint64_t sp = reinterpret_cast<uint64_t>(coro.data() + 8192) & ~uint64_t(15);
      TT_CHECK(spin_with_rsp(sp, kSpin) == 0, "spin loop broken");
      spins.fetch_add(1);
    }
  });
  rbp1.join();
  rbp2.join();
  rsp_thread.join();
  coroutine.join();
  torture::stop();
  munmap(none, 1 << 20);
  torture::report(ctx, "%llu spins with corrupt RBP/RSP finished",
                  (unsigned long long)spins.load());
  return 0;
}

// The same as corrupt_frames' RSP thread but without a sigaltstack. The kernel cannot push a
// signal frame onto an unmapped stack, so ANY handled signal kills such a thread with SIGSEGV;
// this shows whether sampling does. (Registered but disabled in CI: see the CMakeLists.)
TORTURE_SCENARIO(corrupt_sp_no_altstack) {
  const uint64_t unmapped = unmapped_address();
  torture::start(ctx);
  torture::Deadline deadline(ctx.seconds);
  uint64_t spins = 0;
  std::thread t([&] {
    while (!deadline.passed()) {
      assert_unmapped(unmapped);
      TT_CHECK(spin_with_rsp(unmapped, kSpin) == 0, "spin loop broken");
      ++spins;
    }
  });
  t.join();
  torture::stop();
  torture::report(ctx, "%llu spins with RSP unmapped and no sigaltstack",
                  (unsigned long long)spins);
  return 0;
}

namespace {

struct GuardRun {
  size_t free_bytes = 0;   // between RSP and the guard page while spinning
  size_t deepest_use = 0;  // the most stack below RSP that signal delivery used
  uint64_t spins = 0;
};

constexpr unsigned char kPaint = 0xA5;

// Paints the unused stack below RSP, spins (being sampled), then finds how far down the paint
// was overwritten: that is what signal delivery needed.
__attribute__((noinline)) void spin_at_bottom(uintptr_t low, const torture::Deadline& deadline,
                                              GuardRun* run) {
  uintptr_t sp;
  asm volatile("mov %%rsp, %0" : "=r"(sp));
  const uintptr_t paint_end = sp - 1024;  // leaves room for the calls made while spinning
  // volatile: the compiler must not replace this with memset (it would use the painted stack).
  for (volatile unsigned char* p = reinterpret_cast<unsigned char*>(low);
       p < reinterpret_cast<unsigned char*>(paint_end); ++p) {
    *p = kPaint;
  }
  uint64_t spins = 0;
  while (!deadline.passed()) {
    TT_CHECK(spin_with_rbp(sp, 200000) == 0, "spin loop broken");  // no call deeper than this
    ++spins;
  }
  const unsigned char* p = reinterpret_cast<const unsigned char*>(low);
  while (reinterpret_cast<uintptr_t>(p) < paint_end && *p == kPaint) ++p;
  run->free_bytes = sp - low;
  run->deepest_use = sp - reinterpret_cast<uintptr_t>(p);
  run->spins = spins;
}

__attribute__((noinline)) void descend(uintptr_t low, size_t target_free,
                                       const torture::Deadline& deadline, GuardRun* run) {
  volatile char frame[512];
  frame[0] = 1;
  const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (here - low < target_free + 1024) {
    spin_at_bottom(low, deadline, run);
  } else {
    descend(low, target_free, deadline, run);
  }
  frame[1] = frame[0];
}

struct GuardArgs {
  size_t target_free;
  bool altstack;
  const torture::Deadline* deadline;
  GuardRun run;
};

void* guard_thread(void* arg) {
  auto* a = static_cast<GuardArgs*>(arg);
  std::vector<char> alt;
  if (a->altstack) install_altstack(alt);
  pthread_attr_t attr;
  pthread_getattr_np(pthread_self(), &attr);
  void* addr;
  size_t size;
  pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  // For a thread, the reported stack starts just above the guard page.
  descend(reinterpret_cast<uintptr_t>(addr), a->target_free, *a->deadline, &a->run);
  if (a->altstack) remove_altstack();
  return nullptr;
}

}  // namespace

// Threads running right above their guard page: 8 KiB free (room for the kernel's signal frame,
// a few KiB with AVX-512 state, plus the handler), and 1.5 KiB free with a sigaltstack. Also
// measures how much stack the sampling signal takes.
TORTURE_SCENARIO(guard_page) {
  const unsigned long minsig = getauxval(AT_MINSIGSTKSZ);
  torture::start(ctx);
  torture::Deadline deadline(ctx.seconds);
  GuardArgs args[] = {{8192, false, &deadline, {}}, {1536, true, &deadline, {}}};
  pthread_t threads[2];
  for (int i = 0; i < 2; ++i) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    TT_CHECK(pthread_create(&threads[i], &attr, guard_thread, &args[i]) == 0, "pthread_create");
    pthread_attr_destroy(&attr);
  }
  for (pthread_t t : threads) pthread_join(t, nullptr);
  torture::stop();
  for (const GuardArgs& a : args) {
    TT_CHECK(a.run.spins > 0, "no progress near the guard page");
    TT_CHECK(a.run.free_bytes <= a.target_free + 2048, "did not get near the guard (%zu free)",
             a.run.free_bytes);
    std::printf(
        "  %s: %zu bytes free above the guard page, signal delivery used %zu bytes of "
        "it (AT_MINSIGSTKSZ %lu)\n",
        a.altstack ? "with sigaltstack" : "no sigaltstack  ", a.run.free_bytes, a.run.deepest_use,
        minsig);
  }
  torture::report(ctx, "two threads spun just above their guard pages");
  return 0;
}
