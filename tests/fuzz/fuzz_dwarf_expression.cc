// libFuzzer target: the CFI expression evaluator on arbitrary operations, registers and stack
// bytes. Expressions come from .eh_frame of any module in the process, so nothing in them may
// make the evaluator read outside the stack copy or hit undefined behaviour.
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "unwind/dwarf/dwarf_expression.h"

namespace {

// Consumes bytes from the front of the input; zeros once it runs dry.
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inprof::internal;
  Input in{data, size};
  uint64_t registers[kRegisterCount];
  for (auto& r : registers) r = in.take<uint8_t>() * 8u + 0x7000'0000'0000;  // near the stack

  // 256 bytes of "stack" at a fixed address; its own storage, checked by ASan.
  std::vector<uint8_t> stack_bytes(256);
  for (auto& b : stack_bytes) b = in.take<uint8_t>();
  StackSnapshot snapshot;
  snapshot.buffer = stack_bytes.data();
  snapshot.capacity = stack_bytes.size();
  snapshot.stack_start = 0x7000'0000'0000;
  snapshot.stack_size = in.take<uint8_t>();  // some or all of the buffer
  snapshot.stack_found = true;

  const uint8_t flags = in.take<uint8_t>();
  ExpressionContext context{registers, &snapshot, std::nullopt};
  if (flags & 1) context.cfa = in.take<uint64_t>();

  std::vector<ExprOp> ops;
  while (in.size > 0 && ops.size() < 64) {
    ExprOp op;
    op.atom = in.take<uint8_t>();
    // Small operands most of the time (offsets, shift counts), full ones sometimes.
    if (const uint8_t width = in.take<uint8_t>(); width & 0x80) {
      op.number = in.take<uint64_t>();
    } else {
      op.number = width;
    }
    op.number2 = in.take<uint8_t>();
    ops.push_back(op);
  }
  bool is_value = false;
  (void)evaluate_expression(ops, context, &is_value);
  return 0;
}
