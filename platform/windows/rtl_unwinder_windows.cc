// The Windows x64 unwinder: RtlLookupFunctionEntry and RtlVirtualUnwind over the PE's .pdata /
// .xdata, run on the stack copy after the thread has resumed (RtlLookupFunctionEntry takes ntdll
// locks the suspended thread may have held).
//
// RtlVirtualUnwind reads the stack through the CONTEXT it is given: RSP and the frame register.
// So the copy is given to it in the thread's place. The copy sits in a work buffer at the same
// offset modulo 16 as the original, and every register that pointed into the copied part of the
// stack is moved by the same distance ("rebased"): RSP, and RBP or whichever register a function
// uses as its frame register; after each step, so is every register restored from the copy (a
// saved RBP). Code addresses are not rebased; return addresses read from the copy are the
// thread's own. Each frame's SP is moved back before it is reported.
//
// Bounds: RtlVirtualUnwind reads a frame at RSP plus the offsets its unwind codes give, which
// cannot be checked before the call. A zero-filled tail after the copy absorbs reads just past
// its end (a truncated copy); the walk stops as soon as RSP leaves the copy, and a function whose
// frame register does not point into the copy is not unwound at all.
#include <windows.h>

#include <cstring>
#include <vector>

#include "unwind/os_unwinder.h"

namespace inprof::internal {
namespace {

constexpr size_t kTail = 64 * 1024;  // zeroes after the copy: the largest frame read past it
constexpr uint32_t kUnwindFlagChainInfo = 0x4;
constexpr uint8_t kUwopSetFpreg = 3;

// The start of an UNWIND_INFO (x64 exception data): enough to learn the frame register.
struct UnwindInfoHeader {
  uint8_t version_and_flags;
  uint8_t prolog_size;
  uint8_t code_count;
  uint8_t frame_register_and_offset;  // register (low 4 bits), scaled offset (high 4 bits)
};
struct UnwindCode {
  uint8_t code_offset;         // end of the prologue instruction, from the function's start
  uint8_t operation_and_info;  // operation (low 4 bits), info (high 4 bits)
};

DWORD64* context_register(CONTEXT& c, unsigned number) {
  DWORD64* registers[16] = {&c.Rax, &c.Rcx, &c.Rdx, &c.Rbx, &c.Rsp, &c.Rbp, &c.Rsi, &c.Rdi,
                            &c.R8,  &c.R9,  &c.R10, &c.R11, &c.R12, &c.R13, &c.R14, &c.R15};
  return registers[number & 15];
}

class RtlUnwinder final : public Unwinder {
 public:
  UnwindOutput unwind(const StackSnapshot& snapshot, std::span<uint64_t> frames,
                      std::span<uint64_t> stack_pointers) override {
    UnwindOutput out;
    if (frames.empty()) {
      out.result = UnwindResult::kDepthLimit;
      return out;
    }
    const uint64_t copy_begin = prepare_copy(snapshot);
    const uint64_t copy_end = copy_begin + snapshot.stack_size;
    const uint64_t delta = copy_begin - snapshot.stack_start;
    auto in_copy = [&](uint64_t v) { return v >= copy_begin && v < copy_end; };
    auto in_stack = [&](uint64_t v) {
      return snapshot.stack_found && v >= snapshot.stack_start && v < snapshot.stack_end();
    };

    CONTEXT context;
    std::memset(&context, 0, sizeof(context));
    context.ContextFlags = CONTEXT_FULL;
    const uint64_t* r = snapshot.regs;
    // DWARF numbering (arch_x86_64.h) to CONTEXT; stack addresses moved into the copy.
    DWORD64* by_dwarf[17] = {&context.Rax, &context.Rdx, &context.Rcx, &context.Rbx, &context.Rsi,
                             &context.Rdi, &context.Rbp, &context.Rsp, &context.R8,  &context.R9,
                             &context.R10, &context.R11, &context.R12, &context.R13, &context.R14,
                             &context.R15, &context.Rip};
    for (int i = 0; i < 17; ++i) *by_dwarf[i] = i != 16 && in_stack(r[i]) ? r[i] + delta : r[i];

    for (;;) {
      const uint64_t pc = context.Rip;
      if (pc == 0) {  // past the outermost frame (RtlUserThreadStart ends the chain this way)
        out.reached_end = out.count > 0;
        out.result = UnwindResult::kComplete;
        return out;
      }
      if (out.count == frames.size()) {
        out.result = UnwindResult::kDepthLimit;
        return out;
      }
      // The PC is a frame even without a stack (then registers were not rebased).
      if (out.count < stack_pointers.size()) {
        stack_pointers[out.count] = in_copy(context.Rsp) ? context.Rsp - delta : context.Rsp;
      }
      frames[out.count++] = pc;
      if (!in_copy(context.Rsp)) {
        out.result = snapshot.stack_truncated ? UnwindResult::kTruncated : UnwindResult::kComplete;
        return out;
      }

      // A return address may be a call's last byte + 1, past its function's end: look up pc - 1.
      const uint64_t lookup_pc = out.count == 1 ? pc : pc - 1;
      DWORD64 image_base = 0;
      PRUNTIME_FUNCTION function = RtlLookupFunctionEntry(lookup_pc, &image_base, nullptr);
      const uint64_t previous_sp = context.Rsp;
      if (function == nullptr) {
        // No unwind data: a leaf function (it moved no registers, RSP points at the return
        // address) — possible for the interrupted frame only; elsewhere, unknown code.
        if (out.count != 1 || copy_end - context.Rsp < 8) {
          out.result = UnwindResult::kComplete;
          return out;
        }
        std::memcpy(&context.Rip, reinterpret_cast<const void*>(context.Rsp), 8);
        context.Rsp += 8;
      } else {
        if (!frame_register_usable(image_base, function, pc, context, in_copy)) {
          out.result = UnwindResult::kComplete;
          return out;
        }
        PVOID handler_data = nullptr;
        DWORD64 establisher_frame = 0;
        RtlVirtualUnwind(UNW_FLAG_NHANDLER, image_base, pc, function, &context, &handler_data,
                         &establisher_frame, nullptr);
      }
      // Registers the step restored from the copy (the caller's RBP above all) hold addresses
      // in the original stack: move them into the copy too, or the caller's frame register
      // would point outside it and the walk would end one frame up.
      for (unsigned i = 0; i < 16; ++i) {
        DWORD64* reg = context_register(context, i);
        if (in_stack(*reg)) *reg += delta;
      }
      if (context.Rsp <= previous_sp) {  // no progress: damaged data; stop rather than loop
        out.result = UnwindResult::kComplete;
        return out;
      }
    }
  }

 private:
  // Copies the snapshot's stack into the work buffer, at the original's offset modulo 16, with
  // the zero tail behind it. Returns the copy's first address.
  uint64_t prepare_copy(const StackSnapshot& snapshot) {
    const size_t needed = snapshot.stack_size + kTail + 16;
    if (work_.size() < needed) work_.resize(needed);
    auto base = reinterpret_cast<uint64_t>(work_.data());
    base += (snapshot.stack_start - base) & 15;
    auto* copy = reinterpret_cast<uint8_t*>(base);
    if (snapshot.stack_size > 0) std::memcpy(copy, snapshot.buffer, snapshot.stack_size);
    std::memset(copy + snapshot.stack_size, 0, kTail);
    return base;
  }

  // Whether RtlVirtualUnwind may use this function's frame register: once its prologue has set
  // it, it must point into the copy (otherwise the walk would read wherever it points).
  template <typename InCopy>
  static bool frame_register_usable(uint64_t image_base, PRUNTIME_FUNCTION function, uint64_t pc,
                                    CONTEXT& context, InCopy in_copy) {
    uint32_t unwind_data = function->UnwindData;
    if (unwind_data & 1) {  // an indirect entry: the RUNTIME_FUNCTION it names holds the data
      unwind_data =
          reinterpret_cast<const RUNTIME_FUNCTION*>(image_base + (unwind_data & ~1u))->UnwindData;
    }
    const auto* info = reinterpret_cast<const UnwindInfoHeader*>(image_base + unwind_data);
    const unsigned frame_register = info->frame_register_and_offset & 15;
    if (frame_register == 0) return true;
    const uint64_t offset = pc - (image_base + function->BeginAddress);
    // A chained body runs after its parent's prologue set the register.
    bool set = (info->version_and_flags >> 3) & kUnwindFlagChainInfo;
    const auto* codes = reinterpret_cast<const UnwindCode*>(info + 1);
    for (unsigned i = 0; !set && i < info->code_count;) {
      const unsigned operation = codes[i].operation_and_info & 15;
      const unsigned operation_info = codes[i].operation_and_info >> 4;
      if (operation == kUwopSetFpreg) {
        set = offset >= codes[i].code_offset;
        break;
      }
      // Slots per operation (x64 UNWIND_CODE): operands take the slots after the code.
      switch (operation) {
        case 0:
        case 2:
        case 10:
          i += 1;
          break;  // PUSH_NONVOL, ALLOC_SMALL, PUSH_MACHFRAME
        case 1:
          i += operation_info == 0 ? 2 : 3;
          break;  // ALLOC_LARGE
        case 4:
        case 8:
          i += 2;
          break;  // SAVE_NONVOL, SAVE_XMM128
        case 5:
        case 9:
          i += 3;
          break;  // SAVE_NONVOL_FAR, SAVE_XMM128_FAR
        default:  // unknown to us: assume set once the whole prologue has run
          set = offset >= info->prolog_size;
          i = info->code_count;
      }
    }
    return !set || in_copy(*context_register(context, frame_register));
  }

  std::vector<uint8_t> work_;
};

}  // namespace

std::unique_ptr<Unwinder> create_os_unwinder() { return std::make_unique<RtlUnwinder>(); }

}  // namespace inprof::internal
