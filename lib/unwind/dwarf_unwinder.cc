#include "unwind/dwarf_unwinder.h"

#include <algorithm>
#include <cstring>

#include "session/process_info.h"
#include "unwind/dwarf/dwarf_expression.h"

namespace inprof::internal {

namespace {

// Reads the copied stack for a walk. A read past the copy's end means the stack went on beyond
// it (the walk ends truncated); any other failed read means the chain is broken there.
struct StackReads {
  const StackSnapshot& snapshot;
  bool truncated = false;
  bool operator()(uint64_t address, uint64_t* value) {
    if (snapshot.read_word(address, value)) return true;
    if (snapshot.stack_truncated && address >= snapshot.stack_end() - 8) truncated = true;
    return false;
  }
};

// One step through a rule given as DWARF expressions: the caller's registers into `next` (a copy
// of `regs`) and its return address. False where the walk ends: no CFA, or the return address or
// the frame pointer cannot be had.
bool step_by_expression(const ExpressionRule& full, const uint64_t* regs,
                        const StackSnapshot& snapshot, StackReads& read, uint64_t* next,
                        uint64_t* return_address) {
  ExpressionContext context{regs, &snapshot, std::nullopt};
  context.cfa = evaluate_expression(full.cfa, context);
  if (!context.cfa) return false;
  for (int r = 0; r < kRegisterCount; ++r) {
    const RegisterRule& rr = full.registers[r];
    if (rr.kind == RegisterRule::Kind::kSame) continue;
    if (rr.kind == RegisterRule::Kind::kUndefined) {
      next[r] = 0;
      continue;
    }
    auto v = evaluate_expression(rr.ops, context);
    if (v && rr.kind == RegisterRule::Kind::kAddress && *v < regs[kRegSp] && !full.signal_frame) {
      continue;  // popped already, as in the simple case
    }
    if (!v || (rr.kind == RegisterRule::Kind::kAddress && !read(*v, &next[r]))) {
      if (r == full.return_address_register || r == kRegFp) return false;
      continue;
    }
    if (rr.kind == RegisterRule::Kind::kValue) next[r] = *v;
  }
  *return_address = next[full.return_address_register];
  next[kRegSp] = *context.cfa;
  return true;
}

}  // namespace

DwarfUnwinder::DwarfUnwinder(std::unique_ptr<CfiProvider> cfi, bool frame_pointer_fallback)
    : cfi_(std::move(cfi)), frame_pointer_fallback_(frame_pointer_fallback) {}

void DwarfUnwinder::set_modules(const std::vector<ModuleInfo>& modules) {
  cfi_->set_modules(modules);
}

const UnwindRule& DwarfUnwinder::rule_for(uint64_t pc) {
  const uint32_t generation = cfi_->generation();
  if (const UnwindRule* hit = cache_.find(pc, generation)) {
    ++cache_.hits;
    return *hit;
  }
  ++cache_.misses;
  cache_.insert(pc, generation, cfi_->rule_for(pc));
  return *cache_.find(pc, generation);
}

UnwindOutput DwarfUnwinder::unwind(const StackSnapshot& snapshot, std::span<uint64_t> frames,
                                   std::span<uint64_t> stack_pointers) {
  const bool want_sps = stack_pointers.size() >= frames.size();
  UnwindOutput out;
  if (frames.empty()) {
    out.result = UnwindResult::kDepthLimit;
    return out;
  }
  if (want_sps) stack_pointers[0] = snapshot.regs[kRegSp];
  frames[out.count++] = snapshot.regs[kRegPc];
  if (!snapshot.stack_found) return out;
  return walk(snapshot, snapshot.regs, /*exact_pc=*/true, !snapshot.registers_partial,
              !snapshot.registers_partial, frames, stack_pointers, out);
}

bool DwarfUnwinder::is_return_address(uint64_t address) {
  if (address < 8 || rule_for(address - 1).kind == RuleKind::kMissing) return false;
  uint8_t before[8];
  return read_memory(address - 8, before, sizeof(before)) == sizeof(before) &&
         ends_with_call(before);
}

UnwindOutput DwarfUnwinder::recover_frame_pointer(const StackSnapshot& snapshot,
                                                  const uint64_t* regs, bool exact_pc,
                                                  std::span<uint64_t> frames,
                                                  std::span<uint64_t> stack_pointers,
                                                  const UnwindOutput& out) {
  constexpr uint64_t kScanBytes = 16 << 10;
  constexpr int kMaxCandidates = 16;
  int candidates = 0;
  const uint64_t end = std::min(snapshot.stack_end(), regs[kRegSp] + kScanBytes);
  for (uint64_t record = (regs[kRegSp] + 7) & ~uint64_t{7}; record + 16 <= end; record += 8) {
    uint64_t saved_fp, return_address;
    if (!snapshot.read_word(record, &saved_fp) ||
        !snapshot.read_word(record + 8, &return_address)) {
      break;
    }
    // The caller's frame pointer lies above (or is 0, or not a pointer at all if the caller does
    // not keep one: then its own CFI does not need it).
    if (saved_fp != 0 && saved_fp <= record && (saved_fp & 7) == 0 && saved_fp >= regs[kRegSp]) {
      continue;
    }
    if (!is_return_address(code_address(return_address))) continue;
    if (++candidates > kMaxCandidates) break;
    uint64_t trial[kRegisterCount];
    std::memcpy(trial, regs, sizeof(trial));
    trial[kRegFp] = record;
    UnwindOutput attempt = walk(snapshot, trial, exact_pc, /*fp_known=*/true, /*lr_known=*/true,
                                frames, stack_pointers, out);
    if (attempt.reached_end || attempt.result == UnwindResult::kDepthLimit) return attempt;
  }
  return out;  // ends here, incomplete
}

UnwindOutput DwarfUnwinder::walk(const StackSnapshot& snapshot, const uint64_t* start_regs,
                                 bool exact_pc, bool fp_known, bool lr_known,
                                 std::span<uint64_t> frames, std::span<uint64_t> stack_pointers,
                                 UnwindOutput out) {
  const bool want_sps = stack_pointers.size() >= frames.size();
  uint64_t regs[kRegisterCount];
  std::memcpy(regs, start_regs, sizeof(regs));

  StackReads read{snapshot};

  // exact_pc: the leaf's PC, or a PC interrupted by a signal, is not after a call.
  bool stepped_without_sp = false;  // the last step returned through LR with SP unchanged
  for (;;) {
    const uint64_t pc = regs[kRegPc];
    const UnwindRule& rule = rule_for(exact_pc ? pc : pc - 1);
    if (!fp_known && rule.kind == RuleKind::kSimple && rule.cfa_register == kRegFp) {
      return recover_frame_pointer(snapshot, regs, exact_pc, frames, stack_pointers, out);
    }
    if (!lr_known &&
        ((rule.kind == RuleKind::kSimple && rule.ra_in_lr) || rule.kind == RuleKind::kMissing)) {
      return out;  // the return address is in a register nobody saw
    }
    uint64_t next[kRegisterCount];
    std::memcpy(next, regs, sizeof(next));
    uint64_t return_address = 0;

    switch (rule.kind) {
      case RuleKind::kEndOfStack:
        out.reached_end = true;
        return out;
      case RuleKind::kMissing: {
        if (!frame_pointer_fallback_ || !fp_known) return out;
        const uint64_t fp = regs[kRegFp];
        uint64_t saved_fp;
        if (fp < regs[kRegSp] || (fp & 7) != 0 || !read(fp, &saved_fp) ||
            !read(fp + 8, &return_address)) {
          if (read.truncated) out.result = UnwindResult::kTruncated;
          return out;
        }
        next[kRegFp] = saved_fp;
        next[kRegSp] = fp + kFrameRecordSize;
        break;
      }
      case RuleKind::kSimple: {
        const uint64_t cfa = regs[rule.cfa_register] + static_cast<int64_t>(rule.cfa_offset);
        // A save slot below SP was popped already (an epilogue after `leave`, whose CFI still
        // names the slot): the register holds the caller's value again.
        const uint64_t fp_slot = cfa + static_cast<int64_t>(rule.fp_offset);
        const bool fp_in_slot = rule.fp_saved && fp_slot >= regs[kRegSp];
        if (rule.ra_in_lr) {
          return_address = regs[kRegReturnAddress];
        } else if (!read(cfa + static_cast<int64_t>(rule.ra_offset), &return_address)) {
          if (read.truncated) out.result = UnwindResult::kTruncated;
          return out;
        }
        if (fp_in_slot && !read(fp_slot, &next[kRegFp])) {
          if (read.truncated) out.result = UnwindResult::kTruncated;
          return out;
        }
        if (fp_in_slot) fp_known = true;
        next[kRegSp] = cfa;
        // The caller's view of the return-address column (LR on aarch64) is the address itself.
        next[kRegReturnAddress] = return_address;
        break;
      }
      case RuleKind::kExpression:
        if (!step_by_expression(cfi_->expression(rule.expression_index), regs, snapshot, read, next,
                                &return_address)) {
          if (read.truncated) out.result = UnwindResult::kTruncated;
          return out;
        }
        break;
    }

    return_address = code_address(return_address);
    if (return_address == 0) {
      out.reached_end = true;  // an outermost frame that clears its return address
      return out;
    }
    // Each caller's frame lies above its callee's; a signal frame may switch stacks, but must
    // still make progress somewhere, or the walk would loop. With a link register, a function
    // that has no frame (a leaf, a prologue) returns through LR with SP unchanged: allowed, but
    // never twice in a row (two frames cannot both be in that state).
    const bool same_sp_through_lr = kHasLinkRegister && next[kRegSp] == regs[kRegSp] &&
                                    !stepped_without_sp && return_address != regs[kRegPc];
    if (next[kRegSp] <= regs[kRegSp] && !(rule.signal_frame && next[kRegSp] != regs[kRegSp]) &&
        !same_sp_through_lr) {
      return out;
    }
    stepped_without_sp = same_sp_through_lr;
    if (out.count == frames.size()) {
      out.result = UnwindResult::kDepthLimit;
      return out;
    }
    if (want_sps) stack_pointers[out.count] = next[kRegSp];
    // Past a signal frame the caller's address is the instruction the signal interrupted, not a
    // return address: recorded one byte further, so that every reader's "return address - 1"
    // (FORMAT.md) lands on it, not on the end of the function before it.
    frames[out.count++] = rule.signal_frame ? return_address + 1 : return_address;
    std::memcpy(regs, next, sizeof(regs));
    regs[kRegPc] = return_address;
    exact_pc = rule.signal_frame;
    lr_known = true;  // the caller's LR is no longer needed: its return address is on the stack
  }
}

}  // namespace inprof::internal
