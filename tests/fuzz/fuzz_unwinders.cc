// libFuzzer target: both unwinders on an arbitrary stack copy and registers; the DWARF one with
// arbitrary rules (simple and expression) from a fake CFI provider. A stack copy holds whatever
// the sampled thread had there, so no content may make a walk read outside the copy, loop or
// write past the frames it was given.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "unwind/dwarf_unwinder.h"
#include "unwind/frame_pointer_unwinder.h"

namespace {

using namespace inprof::internal;

struct Input {
  const uint8_t* data;
  size_t size;
  template <typename T>
  T take() {
    T v{};
    const size_t n = size < sizeof(T) ? size : sizeof(T);
    std::memcpy(&v, data, n);
    data += n;
    size -= n;
    return v;
  }
};

constexpr uint64_t kStackBase = 0x7ffd'0000'0000;

// Rules chosen by the input, looked up by a hash of the PC. Honours the CfiProvider contract
// that the real one keeps: simple rules are SP- or FP-based, expressions have valid indices.
class FakeCfi final : public CfiProvider {
 public:
  explicit FakeCfi(Input& in) {
    for (auto& rule : rules_) {
      const uint8_t kind = in.take<uint8_t>();
      rule.kind = static_cast<RuleKind>(kind % 4);
      rule.signal_frame = kind & 0x10;
      rule.cfa_register = (kind & 0x20) ? kRegFp : kRegSp;
      rule.fp_saved = kind & 0x40;
      rule.cfa_offset = in.take<int8_t>() * 8;
      rule.ra_offset = in.take<int8_t>();
      rule.fp_offset = in.take<int8_t>();
      rule.expression_index = in.take<uint8_t>() % kExpressions;
    }
    for (auto& e : expressions_) {
      e.cfa = ops(in);
      e.signal_frame = in.take<uint8_t>() & 1;
      e.return_address_register = in.take<uint8_t>() % kRegisterCount;
      for (auto& r : e.registers) {
        const uint8_t kind = in.take<uint8_t>();
        if (kind < 0xc0) continue;  // most registers stay as they are
        r.kind = static_cast<RegisterRule::Kind>(kind % 4);
        r.ops = ops(in);
      }
    }
  }
  void set_modules(const std::vector<ModuleInfo>&) override {}
  UnwindRule rule_for(uint64_t pc) override { return rules_[(pc ^ (pc >> 7)) % kRules]; }
  const ExpressionRule& expression(uint32_t index) const override { return expressions_[index]; }
  uint32_t generation() const override { return 0; }

 private:
  static constexpr size_t kRules = 8, kExpressions = 2;
  static std::vector<ExprOp> ops(Input& in) {
    std::vector<ExprOp> out(in.take<uint8_t>() % 6);
    for (auto& op : out) {
      op.atom = in.take<uint8_t>();
      op.number = static_cast<uint64_t>(in.take<int16_t>());
      op.number2 = static_cast<uint64_t>(in.take<int8_t>());
    }
    return out;
  }
  UnwindRule rules_[kRules];
  ExpressionRule expressions_[kExpressions];
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{data, size};
  const uint8_t flags = in.take<uint8_t>();
  StackSnapshot snapshot;
  // Registers near the copy (so walks go somewhere), some anywhere.
  for (auto& r : snapshot.regs) {
    r = (flags & 1) ? in.take<uint64_t>() : kStackBase + in.take<uint16_t>() % 4096;
  }
  snapshot.regs[kRegSp] = kStackBase + in.take<uint8_t>() * 8u;
  auto cfi = std::make_unique<FakeCfi>(in);

  // The rest is the stack copy, starting at SP.
  std::vector<uint8_t> copy(in.data, in.data + in.size);
  snapshot.buffer = copy.data();
  snapshot.capacity = copy.size();
  snapshot.stack_start = snapshot.regs[kRegSp];
  snapshot.stack_size = copy.size();
  snapshot.stack_found = (flags & 2) == 0;
  snapshot.stack_truncated = flags & 4;

  uint64_t frames[64], sps[64];
  const size_t depth = 1 + flags % 64;
  FramePointerUnwinder fp;
  const UnwindOutput a = fp.unwind(snapshot, std::span(frames, depth), std::span(sps, depth));
  if (a.count > depth) __builtin_trap();
  DwarfUnwinder dwarf(std::move(cfi), flags & 8);
  const UnwindOutput b = dwarf.unwind(snapshot, std::span(frames, depth), std::span(sps, depth));
  if (b.count > depth) __builtin_trap();
  return 0;
}
