// The CfiProvider (tables read from memory) against libdw reading the same modules' files: for
// many addresses of libc, libstdc++, this program and the vDSO, the same UnwindRule, and for
// expression rules the same operations. libdw is the reference here only; the library has none.
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "dump/dump_records.h"
#include "libdw_reference.h"
#include "sampling/module_lister.h"
#include "unwind/dwarf/cfi_provider.h"

namespace inprof::internal {
namespace {

// rax and rbx differ by design where no CFI mentions them: libdw's x86-64 table says rax is
// callee-saved where the psABI (and we) say rbx.
bool same_register(int r, const RegisterRule& a, const RegisterRule& b) {
  const bool defaults =
      (a.kind == RegisterRule::Kind::kSame || a.kind == RegisterRule::Kind::kUndefined) &&
      (b.kind == RegisterRule::Kind::kSame || b.kind == RegisterRule::Kind::kUndefined);
#if defined(__x86_64__)
  if ((r == 0 || r == 3) && defaults) return true;
#else
  (void)defaults;
#endif
  // Where the CFI says nothing of SP, we say "the CFA" (the caller's SP by definition) on every
  // architecture; libdw only on x86-64. The unwinder takes SP from the CFA either way.
  const bool sp_is_cfa = a.kind == RegisterRule::Kind::kValue && a.ops.size() == 1 &&
                         a.ops[0].atom == DW_OP_call_frame_cfa;
  if (r == kRegSp && sp_is_cfa && b.kind == RegisterRule::Kind::kUndefined) return true;
  if (a.kind != b.kind || a.ops.size() != b.ops.size()) return false;
  for (size_t i = 0; i < a.ops.size(); ++i) {
    if (a.ops[i].atom != b.ops[i].atom || a.ops[i].number != b.ops[i].number ||
        a.ops[i].number2 != b.ops[i].number2) {
      return false;
    }
  }
  return true;
}

bool same_ops(const std::vector<ExprOp>& a, const std::vector<ExprOp>& b) {
  RegisterRule x, y;
  x.ops = a;
  y.ops = b;
  return same_register(-1, x, y);
}

std::string describe(const UnwindRule& r) {
  return "kind " + std::to_string(int(r.kind)) + " sig " + std::to_string(r.signal_frame) +
         " cfa r" + std::to_string(r.cfa_register) + "+" + std::to_string(r.cfa_offset) + " ra " +
         std::to_string(r.ra_offset) + (r.ra_in_lr ? " lr" : "") + " fp " +
         (r.fp_saved ? std::to_string(r.fp_offset) : "same");
}

struct Comparison {
  int checked = 0, simple = 0, expression = 0, missing = 0, mismatches = 0;
};

void compare_module(CfiProvider& provider, const ModuleInfo& m, LibdwReference& reference,
                    uint64_t step, Comparison* c) {
  std::vector<ExpressionRule> theirs_expressions;
  for (auto [begin, end] : m.code_ranges) {
    for (uint64_t pc = begin; pc < end; pc += step) {
      const UnwindRule ours = provider.rule_for(pc);
      const UnwindRule theirs = reference.rule(pc - m.load_bias, &theirs_expressions);
      ++c->checked;
      c->simple += ours.kind == RuleKind::kSimple;
      c->expression += ours.kind == RuleKind::kExpression;
      c->missing += ours.kind == RuleKind::kMissing;
      bool same = ours.kind == theirs.kind && ours.signal_frame == theirs.signal_frame;
      if (same && ours.kind == RuleKind::kSimple) {
        same = ours.cfa_register == theirs.cfa_register && ours.cfa_offset == theirs.cfa_offset &&
               ours.ra_offset == theirs.ra_offset && ours.ra_in_lr == theirs.ra_in_lr &&
               ours.fp_saved == theirs.fp_saved && ours.fp_offset == theirs.fp_offset;
      }
      if (same && ours.kind == RuleKind::kExpression) {
        const ExpressionRule& a = provider.expression(ours.expression_index);
        const ExpressionRule& b = theirs_expressions[theirs.expression_index];
        same = same_ops(a.cfa, b.cfa) && a.signal_frame == b.signal_frame &&
               a.return_address_register == b.return_address_register;
        for (int r = 0; same && r < kRegisterCount; ++r) {
          same = same_register(r, a.registers[r], b.registers[r]);
          if (!same) ADD_FAILURE() << "register " << r;
        }
      }
      if (!same && ++c->mismatches <= 10) {
        ADD_FAILURE() << m.path << " +0x" << std::hex << pc - m.load_bias << std::dec << ": ours "
                      << describe(ours) << ", libdw " << describe(theirs);
      }
    }
  }
}

TEST(EhFrameAgainstLibdw, SameRulesForLibcLibstdcxxThisProgramAndTheVdso) {
  std::vector<ModuleInfo> modules;
  ModuleLister::create()->list(modules);
  auto provider = CfiProvider::create();
  provider->set_modules(modules);
  int compared_modules = 0;
  for (const ModuleInfo& m : modules) {
    const bool vdso = (m.flags & kModuleVdso) != 0;
    const bool main = (m.flags & kModuleMainExecutable) != 0;
    const bool libc = m.path.find("/libc.so.6") != std::string::npos;
    const bool cxx = m.path.find("/libstdc++.so") != std::string::npos;
    if (!vdso && !main && !libc && !cxx) continue;
    LibdwReference reference;
    const bool opened =
        vdso ? reference.open_memory(vdso_image(m.start, m.end)) : reference.open_file(m.path);
    if (!opened) {
      ADD_FAILURE() << "libdw cannot read " << m.path;
      continue;
    }
    Comparison c;
    compare_module(*provider, m, reference, vdso ? 1 : (main ? 3 : 7), &c);
    std::printf("%s: %d addresses, %d simple, %d expression, %d without CFI, %d differ\n",
                m.path.c_str(), c.checked, c.simple, c.expression, c.missing, c.mismatches);
    EXPECT_EQ(c.mismatches, 0) << m.path;
    EXPECT_GT(c.simple, c.checked / 2) << m.path;
    ++compared_modules;
  }
  EXPECT_GE(compared_modules, 3);
}

}  // namespace
}  // namespace inprof::internal
