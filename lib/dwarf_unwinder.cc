#include "dwarf_unwinder.h"

#include <cstring>

#include "dwarf/dwarf_expression.h"

namespace inprof::internal {

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
  uint64_t regs[kRegisterCount];
  std::memcpy(regs, snapshot.regs, sizeof(regs));
  if (want_sps) stack_pointers[0] = regs[kRegSp];
  frames[out.count++] = regs[kRegPc];
  if (!snapshot.stack_found) return out;

  // A read past the copy's end means the stack went on beyond it; any other failed read means
  // the chain is broken here.
  bool truncated = false;
  auto read = [&](uint64_t address, uint64_t* value) {
    if (snapshot.read_word(address, value)) return true;
    if (snapshot.stack_truncated && address >= snapshot.stack_end() - 8) truncated = true;
    return false;
  };

  bool exact_pc = true;  // the leaf's PC, or a PC interrupted by a signal, is not after a call
  bool stepped_without_sp = false;  // the last step returned through LR with SP unchanged
  for (;;) {
    const uint64_t pc = regs[kRegPc];
    const UnwindRule& rule = rule_for(exact_pc ? pc : pc - 1);
    uint64_t next[kRegisterCount];
    std::memcpy(next, regs, sizeof(next));
    uint64_t return_address = 0;

    switch (rule.kind) {
      case RuleKind::kEndOfStack:
        out.reached_end = true;
        return out;
      case RuleKind::kMissing: {
        if (!frame_pointer_fallback_) return out;
        const uint64_t fp = regs[kRegFp];
        uint64_t saved_fp;
        if (fp < regs[kRegSp] || (fp & 7) != 0 || !read(fp, &saved_fp) ||
            !read(fp + 8, &return_address)) {
          if (truncated) out.result = UnwindResult::kTruncated;
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
          if (truncated) out.result = UnwindResult::kTruncated;
          return out;
        }
        if (fp_in_slot && !read(fp_slot, &next[kRegFp])) {
          if (truncated) out.result = UnwindResult::kTruncated;
          return out;
        }
        next[kRegSp] = cfa;
        // The caller's view of the return-address column (LR on aarch64) is the address itself.
        next[kRegReturnAddress] = return_address;
        break;
      }
      case RuleKind::kExpression: {
        const ExpressionRule& full = cfi_->expression(rule.expression_index);
        ExpressionContext context{regs, &snapshot, std::nullopt};
        context.cfa = evaluate_expression(full.cfa, context);
        if (!context.cfa) return out;
        for (int r = 0; r < kRegisterCount; ++r) {
          const RegisterRule& rr = full.registers[r];
          if (rr.kind == RegisterRule::Kind::kSame) continue;
          if (rr.kind == RegisterRule::Kind::kUndefined) {
            next[r] = 0;
            continue;
          }
          auto v = evaluate_expression(rr.ops, context);
          if (v && rr.kind == RegisterRule::Kind::kAddress && *v < regs[kRegSp] &&
              !full.signal_frame) {
            continue;  // popped already, as in the simple case
          }
          if (!v || (rr.kind == RegisterRule::Kind::kAddress && !read(*v, &next[r]))) {
            if (r == full.return_address_register || r == kRegFp) {
              if (truncated) out.result = UnwindResult::kTruncated;
              return out;
            }
            continue;
          }
          if (rr.kind == RegisterRule::Kind::kValue) next[r] = *v;
        }
        return_address = next[full.return_address_register];
        next[kRegSp] = *context.cfa;
        break;
      }
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
    frames[out.count++] = return_address;
    std::memcpy(regs, next, sizeof(regs));
    regs[kRegPc] = return_address;
    exact_pc = rule.signal_frame;
  }
}

}  // namespace inprof::internal
