// libFuzzer target: the .eh_frame parser (header search, linear walk, CIE/FDE parsing, the CFA
// program, the reduction to rules) on arbitrary tables. The tables come from every module mapped
// in a profiled process: nothing in them may make the parser read outside them, loop without end
// or hit undefined behaviour.
//
// Input: a 16-bit pc offset, an 8-bit header length, the header, then .eh_frame.
#include <cstdint>
#include <cstring>
#include <vector>

#include "unwind/dwarf/eh_frame.h"
#include "unwind/dwarf/row_reduction.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inprof::internal;
  if (size < 3) return 0;
  uint16_t pc_offset;
  std::memcpy(&pc_offset, data, 2);
  const size_t hdr_size = data[2] < size - 3 ? data[2] : size - 3;
  // Copies of their own, so that ASan sees any read past either table.
  const std::vector<uint8_t> hdr(data + 3, data + 3 + hdr_size);
  const std::vector<uint8_t> frame(data + 3 + hdr_size, data + size);
  constexpr uint64_t kHdr = 0x30000, kFrame = 0x40000;
  RegionView view;
  view.add(kHdr, hdr.data(), hdr.size());
  view.add(kFrame, frame.data(), frame.size());
  const uint64_t pc = 0x1000 + pc_offset;
  std::vector<ExpressionRule> expressions;
  EhFrameSections with_header;
  with_header.hdr = kHdr;
  with_header.hdr_size = hdr.size();
  EhFrameSections without;
  without.eh_frame = kFrame;
  for (const EhFrameSections& sections : {with_header, without}) {
    if (auto row = find_cfi_row(view, sections, pc)) (void)reduce_row(*row, view, &expressions);
  }
  return 0;
}
