// The DWARF unwinder against ground truth: code built -O2 -fomit-frame-pointer with known call
// chains (tests/unwind_targets), sampled for real through the signal copier.
#include "unwind/dwarf_unwinder.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <thread>

#include "sampling/module_lister.h"
#include "sampling/stack_copier.h"
#include "session/process_info.h"
#include "signal_snapshot.h"
#include "test_util.h"
#include "unwind/frame_pointer_unwinder.h"
#include "unwind_targets/unwind_targets.h"

namespace inprof::internal {
namespace {

// The names of frames inside the targets library, leaf first. Return addresses are looked up
// at address - 1 (the call), as symbolicate does.
struct Walk {
  std::vector<uint64_t> frames;
  UnwindOutput out;
  std::vector<std::string> target_names() const {
    Dl_info self;
    dladdr(reinterpret_cast<void*>(&target_recurse), &self);
    std::vector<std::string> names;
    for (size_t i = 0; i < frames.size(); ++i) {
      Dl_info info;
      uint64_t lookup = i == 0 ? frames[i] : frames[i] - 1;
      if (dladdr(reinterpret_cast<void*>(lookup), &info) && info.dli_fbase == self.dli_fbase &&
          info.dli_sname) {
        names.push_back(info.dli_sname);
      }
    }
    return names;
  }
  // For failure messages: the raw frames.
  std::string hex() const {
    std::string text;
    char buf[24];
    for (uint64_t f : frames) {
      std::snprintf(buf, sizeof(buf), " 0x%llx", static_cast<unsigned long long>(f));
      text += buf;
    }
    return text;
  }
};

class DwarfUnwinderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stack_.resize(256 << 10);
    snapshot_.buffer = stack_.data();
    snapshot_.capacity = stack_.size();
    auto lister = ModuleLister::create();
    lister->list(modules_);
    dwarf_ = std::make_unique<DwarfUnwinder>(CfiProvider::create(), /*fp fallback=*/false);
    dwarf_->set_modules(modules_);
    unwind_target_ready = 0;
    unwind_target_release = 0;
  }
  void TearDown() override {
    unwind_target_release = 1;
    if (thread_.joinable()) thread_.join();
  }

  // Runs `target` on a new thread and waits until it is in place.
  void start(std::function<void()> target) {
    thread_ = std::thread([this, target] {
      tid_ = current_thread_id();
      target();
    });
    while (!unwind_target_ready) std::this_thread::yield();
  }

  Walk sample(Unwinder& unwinder) {
    Walk w;
    EXPECT_TRUE(signal_snapshot_.take(tid_, snapshot_));
    w.frames.resize(512);
    w.out = unwinder.unwind(snapshot_, w.frames);
    w.frames.resize(w.out.count);
    return w;
  }
  Walk sample() { return sample(*dwarf_); }

  inprof::testing::SignalSnapshot signal_snapshot_;
  std::vector<uint8_t> stack_;
  StackSnapshot snapshot_;
  std::vector<ModuleInfo> modules_;
  std::unique_ptr<DwarfUnwinder> dwarf_;
  std::thread thread_;
  std::atomic<uint64_t> tid_{0};
};

std::vector<std::string> repeat(const std::string& name, int n) {
  return std::vector<std::string>(n, name);
}

TEST_F(DwarfUnwinderTest, RecursionWithoutFramePointersIsExact) {
  start([] { target_recurse(25); });
  for (int i = 0; i < 20; ++i) {
    Walk w = sample();
    auto expected = repeat("target_recurse", 26);
    expected.insert(expected.begin(), "target_leaf_spin");
    EXPECT_EQ(w.target_names(), expected);
    EXPECT_TRUE(w.out.reached_end) << "stopped after " << w.frames.size() << " frames";
    EXPECT_EQ(w.out.result, UnwindResult::kComplete);
  }
  // The frame-pointer walk, on the same code, cannot do this: it is what DWARF is for.
  FramePointerUnwinder fp;
  EXPECT_LT(sample(fp).target_names().size(), 27u);
}

TEST_F(DwarfUnwinderTest, ThroughQsortInLibc) {
  start([] { target_qsort(); });
  Walk w = sample();
  EXPECT_EQ(w.target_names(), (std::vector<std::string>{"target_compare_spin", "target_qsort"}));
  EXPECT_TRUE(w.out.reached_end);
}

TEST_F(DwarfUnwinderTest, ThroughStdSort) {
  start([] { target_std_sort(); });
  Walk w = sample();
  auto names = w.target_names();
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names.front(), "target_less_spin");
  EXPECT_EQ(names.back(), "target_std_sort");
  EXPECT_TRUE(w.out.reached_end);
}

TEST_F(DwarfUnwinderTest, ThroughPthreadOnce) {
  start([] { target_pthread_once(); });
  Walk w = sample();
  EXPECT_EQ(w.target_names(),
            (std::vector<std::string>{"target_once_spin", "target_pthread_once"}));
  EXPECT_TRUE(w.out.reached_end);
}

// A sample that lands in the program's own signal handler unwinds through the signal trampoline
// (__restore_rt) back into the code the signal interrupted.
TEST_F(DwarfUnwinderTest, ThroughTheSignalTrampoline) {
  start([] { target_signal(); });
  Walk w = sample();
  EXPECT_EQ(w.target_names(), (std::vector<std::string>{"target_signal_spin", "target_signal"}))
      << "frames:" << w.hex();
  EXPECT_TRUE(w.out.reached_end);
}

// The frame a signal interrupted is recorded so that the usual "return address - 1" lands on the
// interrupted instruction itself: a fault at a function's first byte must not be named after the
// function that ends just before it.
TEST_F(DwarfUnwinderTest, AFrameInterruptedAtItsFirstByteKeepsItsName) {
#if defined(__x86_64__)
  start([] { target_signal_at_entry(); });
  Walk w = sample();
  EXPECT_EQ(w.target_names(),
            (std::vector<std::string>{"target_entry_fault_spin", "target_faults_at_entry",
                                      "target_signal_at_entry"}))
      << "frames:" << w.hex();
  EXPECT_TRUE(w.out.reached_end);
#else
  GTEST_SKIP() << "the target is x86-64 code";
#endif
}

// Samples land at many instructions of a small function and of its caller's loop (the call
// through the PLT included): the caller must always be found, and the walk must always reach
// the thread's start.
TEST_F(DwarfUnwinderTest, AnyInstructionOfAFunctionUnwinds) {
  start([] { target_prologue_loop(); });
  std::set<uint64_t> leaf_pcs;
  // 2,000 samples, and more (up to 20,000) while they have not yet spread over enough
  // instructions: on a loaded machine the signal tends to land at the same few places.
  const size_t wanted = testing::emulator() ? 0 : 8;
  for (int i = 0; i < 20000 && (i < 2000 || leaf_pcs.size() < wanted); ++i) {
    Walk w = sample();
    auto names = w.target_names();
    ASSERT_FALSE(names.empty()) << "at pc 0x" << std::hex << w.frames[0];
    if (names.front() == "target_small_work") {
      leaf_pcs.insert(w.frames[0]);
      ASSERT_EQ(names, (std::vector<std::string>{"target_small_work", "target_prologue_loop"}))
          << "at pc 0x" << std::hex << w.frames[0];
    } else {
      ASSERT_EQ(names, (std::vector<std::string>{"target_prologue_loop"}));
    }
    ASSERT_TRUE(w.out.reached_end) << "at pc 0x" << std::hex << w.frames[0];
  }
  // The samples really covered different instructions (not under qemu-user, which takes
  // signals only at block boundaries: the walks above still had to be right). A CPU takes an
  // interrupt only where it retires instructions, so not at every one of the 24: on an idle
  // machine 20,000 samples landed on 7 to 9 of them, under load on more.
  if (!testing::emulator()) {
    EXPECT_GE(leaf_pcs.size(), 5u);
  }
}

#if defined(__x86_64__)
// Code generated at run time has no unwind tables: the walk continues by frame pointer through
// it and picks up CFI again in the code that called it.
class JitCode {
 public:
  // push rbp; mov rbp, rsp; movabs rax, target; call rax; pop rbp; ret
  explicit JitCode(void (*target)()) {
    page_ = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    auto* p = static_cast<uint8_t*>(page_);
    const uint8_t prologue[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0xb8};
    std::memcpy(p, prologue, sizeof(prologue));
    const auto address = reinterpret_cast<uint64_t>(target);
    std::memcpy(p + sizeof(prologue), &address, 8);
    const uint8_t call_and_return[] = {0xff, 0xd0, 0x5d, 0xc3};
    std::memcpy(p + sizeof(prologue) + 8, call_and_return, sizeof(call_and_return));
    mprotect(page_, 4096, PROT_READ | PROT_EXEC);
  }
  ~JitCode() { munmap(page_, 4096); }
  void (*entry() const)() { return reinterpret_cast<void (*)()>(page_); }
  uint64_t begin() const { return reinterpret_cast<uint64_t>(page_); }

 private:
  void* page_;
};

__attribute__((noinline)) void call_jit(void (*jit)()) {
  jit();
  asm volatile("" ::: "memory");
}

TEST_F(DwarfUnwinderTest, JitFramesContinueByFramePointer) {
  JitCode jit(&target_leaf_spin);
  start([&] { call_jit(jit.entry()); });
  auto auto_mode = std::make_unique<DwarfUnwinder>(CfiProvider::create(), /*fp fallback=*/true);
  auto_mode->set_modules(modules_);
  Walk w = sample(*auto_mode);
  ASSERT_GE(w.frames.size(), 3u);
  EXPECT_EQ(w.target_names().front(), "target_leaf_spin");
  EXPECT_GE(w.frames[1], jit.begin());  // the JIT frame, found through its frame pointer
  EXPECT_LT(w.frames[1], jit.begin() + 4096);
  const auto caller = reinterpret_cast<uint64_t>(&call_jit);  // a few bytes long
  EXPECT_GT(w.frames[2], caller);
  EXPECT_LT(w.frames[2], caller + 64);
  EXPECT_TRUE(w.out.reached_end);

  // DWARF only: the walk stops at the JIT frame instead of guessing.
  Walk strict = sample();
  EXPECT_EQ(strict.frames.size(), 2u);
  EXPECT_FALSE(strict.out.reached_end);

  unwind_target_release = 1;  // the thread must leave the JIT page before it is unmapped
  thread_.join();
}
#endif

// The same with classic frame-pointer frames: in the instruction after `leave` the CFI still
// names the saved-FP slot, which is below SP (outside the copy) and already popped.
TEST_F(DwarfUnwinderTest, AnyInstructionOfAFramePointerFunctionUnwinds) {
  start([] { target_fp_loop(); });
  std::set<uint64_t> leaf_pcs;
  const size_t wanted = testing::emulator() ? 0 : 2;  // as above: more samples under load
  for (int i = 0; i < 20000 && (i < 2000 || leaf_pcs.size() < wanted); ++i) {
    Walk w = sample();
    auto names = w.target_names();
    ASSERT_FALSE(names.empty()) << "at pc 0x" << std::hex << w.frames[0];
    if (names.front() == "target_fp_small_work") {
      leaf_pcs.insert(w.frames[0]);
      ASSERT_EQ(names, (std::vector<std::string>{"target_fp_small_work", "target_fp_loop"}))
          << "at pc 0x" << std::hex << w.frames[0];
    } else {
      ASSERT_EQ(names, (std::vector<std::string>{"target_fp_loop"}));
    }
    ASSERT_TRUE(w.out.reached_end) << "at pc 0x" << std::hex << w.frames[0];
  }
  // More than one hot spot. Interrupted PCs cluster after the slow instructions (the loads and
  // stores of -O0 code): 20,000 samples under ASan once found 5 of its 14, and beside two busy
  // loops some runs took 19,000 samples to find 4. Every byte of it is unwound at once by
  // EveryByteOfAFramePointerFunctionUnwinds.
  if (!testing::emulator()) {
    EXPECT_GE(leaf_pcs.size(), 2u);
  }
}

#if defined(__x86_64__)
// Deterministic: a stack copy exactly at the `ret` that follows `pop %rbp`, where the CFI still
// says the caller's FP is saved at CFA-16 — below SP, outside the copy, popped already.
TEST_F(DwarfUnwinderTest, EpilogueAfterPopUnwinds) {
  const auto* code = reinterpret_cast<const uint8_t*>(&target_fp_small_work);
  size_t ret = 0;
  for (size_t i = 1; i < 128 && ret == 0; ++i) {
    if (code[i] == 0xc3 && code[i - 1] == 0x5d) ret = i;  // pop %rbp; ret
  }
  ASSERT_NE(ret, 0u) << "no 'pop %rbp; ret' epilogue in the -O0 target";
  constexpr uint64_t kBase = 0x7ffd00001000;
  std::vector<uint8_t> memory(256, 0);
  auto put = [&](uint64_t address, uint64_t value) {
    std::memcpy(memory.data() + (address - kBase), &value, 8);
  };
  // [SP]: the return address into target_fp_loop's body (past its prologue, where its CFA is
  // FP-based); FP: that caller's frame record, whose saved FP and return address are 0 (the end).
  const uint64_t caller_return = reinterpret_cast<uint64_t>(&target_fp_loop) + 0x11;
  put(kBase, caller_return);
  put(kBase + 0x40, 0);
  put(kBase + 0x48, 0);
  StackSnapshot s;
  s.regs[kRegPc] = reinterpret_cast<uint64_t>(code + ret);
  s.regs[kRegSp] = kBase;
  s.regs[kRegFp] = kBase + 0x40;
  s.buffer = memory.data();
  s.capacity = memory.size();
  s.stack_start = kBase;
  s.stack_size = memory.size();
  s.stack_found = true;
  std::vector<uint64_t> frames(16);
  UnwindOutput out = dwarf_->unwind(s, frames);
  frames.resize(out.count);
  EXPECT_EQ(frames, (std::vector<uint64_t>{s.regs[kRegPc], caller_return}));
  EXPECT_TRUE(out.reached_end);
}
#endif

#if defined(__x86_64__)
// Deterministic: a copy taken at every byte of the -O0 frame-pointer leaf, from its first (the
// return address on top, FP still the caller's) through its `push %rbp`, its body (FP = SP) and
// its `pop %rbp`, to its `ret`: each unwinds to the caller and ends there. (Sampling it finds 4
// or 5 of its 14 instructions: interrupted PCs cluster after its loads and stores.)
TEST_F(DwarfUnwinderTest, EveryByteOfAFramePointerFunctionUnwinds) {
  const auto* code = reinterpret_cast<const uint8_t*>(&target_fp_small_work);
  const size_t entry = code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e ? 4 : 0;  // endbr64
  if (code[entry] != 0x55 || code[entry + 1] != 0x48 || code[entry + 2] != 0x89 ||
      code[entry + 3] != 0xe5) {
    GTEST_SKIP() << "the -O0 target does not open with push %rbp; mov %rsp,%rbp";
  }
  size_t ret = 0;
  for (size_t i = entry + 5; i < 128 && ret == 0; ++i) {
    if (code[i] == 0xc3 && code[i - 1] == 0x5d) ret = i;  // pop %rbp; ret
  }
  ASSERT_NE(ret, 0u) << "no 'pop %rbp; ret' epilogue in the -O0 target";
  constexpr uint64_t kBase = 0x7ffd00001000;
  constexpr uint64_t kCallerFrame = kBase + 0x40;  // its saved FP and return address are 0
  const uint64_t caller_return = reinterpret_cast<uint64_t>(&target_fp_loop) + 0x11;
  for (size_t offset = 0; offset <= ret; ++offset) {
    std::vector<uint8_t> memory(256, 0);
    auto put = [&](uint64_t address, uint64_t value) {
      std::memcpy(memory.data() + (address - kBase), &value, 8);
    };
    StackSnapshot s;
    s.regs[kRegPc] = reinterpret_cast<uint64_t>(code + offset);
    s.regs[kRegSp] = kBase;
    const bool pushed = offset > entry && offset < ret;  // the caller's FP is on the stack
    if (pushed) {
      put(kBase, kCallerFrame);
      put(kBase + 8, caller_return);
    } else {
      put(kBase, caller_return);
    }
    s.regs[kRegFp] = offset >= entry + 4 && offset < ret ? kBase : kCallerFrame;
    s.buffer = memory.data();
    s.capacity = memory.size();
    s.stack_start = kBase;
    s.stack_size = memory.size();
    s.stack_found = true;
    std::vector<uint64_t> frames(16);
    UnwindOutput out = dwarf_->unwind(s, frames);
    frames.resize(out.count);
    EXPECT_EQ(frames, (std::vector<uint64_t>{s.regs[kRegPc], caller_return}))
        << "at offset " << offset;
    EXPECT_TRUE(out.reached_end) << "at offset " << offset;
  }
}
#endif

#if defined(__aarch64__)
// Deterministic, as qemu-user never stops a thread inside a block: a frameless leaf (GCC gives
// aarch64 leaves no frame record) returns through LR at its first instruction, after it moved
// SP, and at its `ret`; the caller's own frame record (FP) must not be taken for the leaf's.
TEST_F(DwarfUnwinderTest, LeafReturnsThroughTheLinkRegister) {
  const auto* leaf = reinterpret_cast<const uint32_t*>(&target_fp_small_work);
  const auto* caller = reinterpret_cast<const uint32_t*>(&target_fp_loop);
  size_t ret = 0, call = 0;
  for (size_t i = 1; i < 64 && ret == 0; ++i) {
    if (leaf[i] == 0xd65f03c0) ret = i;  // ret
  }
  for (size_t i = 2; i < 64 && call == 0; ++i) {
    if ((caller[i] & 0xfc000000) == 0x94000000) call = i;  // bl (past the caller's prologue)
  }
  ASSERT_NE(ret, 0u) << "no ret in the -O0 leaf";
  ASSERT_NE(call, 0u) << "no bl in target_fp_loop";
  const uint64_t caller_return = reinterpret_cast<uint64_t>(caller + call + 1);
  constexpr uint64_t kBase = 0x7ffd00001000;
  std::vector<uint8_t> memory(256, 0);  // the caller's frame record at FP is {0, 0}: the end
  for (const uint32_t* pc : {leaf, leaf + 1, leaf + ret}) {  // entry, after `sub sp`, `ret`
    StackSnapshot s;
    s.regs[kRegPc] = reinterpret_cast<uint64_t>(pc);
    s.regs[kRegSp] = kBase;
    s.regs[kRegFp] = kBase + 0x40;
    s.regs[kRegLr] = caller_return;
    s.buffer = memory.data();
    s.capacity = memory.size();
    s.stack_start = kBase;
    s.stack_size = memory.size();
    s.stack_found = true;
    std::vector<uint64_t> frames(16);
    UnwindOutput out = dwarf_->unwind(s, frames);
    frames.resize(out.count);
    EXPECT_EQ(frames, (std::vector<uint64_t>{s.regs[kRegPc], caller_return}))
        << "at leaf+" << 4 * (pc - leaf);
    EXPECT_TRUE(out.reached_end) << "at leaf+" << 4 * (pc - leaf);
  }
}

// Return addresses signed by pointer authentication (-mbranch-protection=pac-ret) carry a
// signature in their top bits: the unwinders report the code address.
TEST(FramePointerUnwinderArm, StripsPointerAuthenticationBits) {
  constexpr uint64_t kBase = 0x7ffd00001000;
  std::vector<uint8_t> memory(64, 0);
  const uint64_t record[2] = {0, 0x0023000000401234};  // {next FP = end, signed return address}
  std::memcpy(memory.data() + 16, record, sizeof(record));
  StackSnapshot s;
  s.regs[kRegPc] = 0x401000;
  s.regs[kRegSp] = kBase;
  s.regs[kRegFp] = kBase + 16;
  s.buffer = memory.data();
  s.capacity = memory.size();
  s.stack_start = kBase;
  s.stack_size = memory.size();
  s.stack_found = true;
  std::vector<uint64_t> frames(8);
  FramePointerUnwinder fp;
  UnwindOutput out = fp.unwind(s, frames);
  frames.resize(out.count);
  EXPECT_EQ(frames, (std::vector<uint64_t>{0x401000, 0x401234}));
}
#endif

TEST_F(DwarfUnwinderTest, WarmCacheServesRepeatedStacks) {
  start([] { target_recurse(10); });
  Walk first = sample();
  const uint64_t misses = dwarf_->cache().misses;
  EXPECT_GT(misses, 0u);
  std::vector<uint64_t> frames(512);
  UnwindOutput again = dwarf_->unwind(snapshot_, frames);  // the same copy once more
  frames.resize(again.count);
  EXPECT_EQ(frames, first.frames);
  EXPECT_EQ(dwarf_->cache().misses, misses);  // every rule came from the cache
}

TEST_F(DwarfUnwinderTest, StopsAtAStackCutShort) {
  start([] { target_recurse(2000); });
  snapshot_.capacity = 4096;  // far less than 2000 frames need
  Walk w = sample();
  EXPECT_EQ(w.out.result, UnwindResult::kTruncated);
  EXPECT_FALSE(w.out.reached_end);
  EXPECT_GT(w.frames.size(), 10u);
}

}  // namespace
}  // namespace inprof::internal
