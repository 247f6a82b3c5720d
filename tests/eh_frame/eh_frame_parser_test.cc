// The .eh_frame parser on hand-built tables: CIE/FDE forms, the CFA program's instructions, the
// header's binary search and its linear fallback, and malformed input (no row, no crash, no hang).
#include <gtest/gtest.h>

#include <optional>
#include <random>

#include "eh_frame_builder.h"
#include "unwind/dwarf/dwarf_constants.h"
#include "unwind/dwarf/eh_frame.h"
#include "unwind/dwarf/row_reduction.h"

namespace inprof::internal {
namespace {

using testing::Bytes;
using testing::CieSpec;
using testing::EhFrameBuilder;
using Kind = CfiRegister::Kind;

constexpr uint64_t kEhFrame = 0x40000;
constexpr uint64_t kHdr = 0x30000;
const auto kRa = static_cast<uint8_t>(kRegReturnAddress);
const auto kSp = static_cast<uint8_t>(kRegSp);
const auto kFp = static_cast<uint8_t>(kRegFp);

// The usual CIE: CFA = SP + 8, return address at CFA - 8, data alignment -8.
CieSpec usual_cie() {
  CieSpec cie;
  cie.return_address_register = kRa;
  cie.instructions.u8(DW_CFA_def_cfa).uleb(kSp).uleb(8).u8(DW_CFA_offset | kRa).uleb(1);
  return cie;
}

// A function's prologue and a remember/restore pair around an epilogue:
//   0x00 CFA = SP+8 | 0x01 CFA = SP+16, FP at CFA-16 | 0x04 CFA = FP+16
//   0x24 CFA = SP+8, FP restored (remembered before) | 0x25 back to CFA = FP+16
Bytes prologue_program() {
  Bytes p;
  p.u8(DW_CFA_advance_loc | 1).u8(DW_CFA_def_cfa_offset).uleb(16).u8(DW_CFA_offset | kFp).uleb(2);
  p.u8(DW_CFA_advance_loc | 3).u8(DW_CFA_def_cfa_register).uleb(kFp);
  p.u8(DW_CFA_advance_loc1).u8(0x20).u8(DW_CFA_remember_state);
  p.u8(DW_CFA_def_cfa).uleb(kSp).uleb(8).u8(DW_CFA_restore | kFp);
  p.u8(DW_CFA_advance_loc | 1).u8(DW_CFA_restore_state);
  return p;
}

struct Tables {
  std::vector<uint8_t> eh_frame;
  std::vector<uint8_t> hdr;
  RegionView view;
  EhFrameSections sections;

  void map() {
    view = RegionView{};
    view.add(kEhFrame, eh_frame.data(), eh_frame.size());
    if (!hdr.empty()) view.add(kHdr, hdr.data(), hdr.size());
    sections = EhFrameSections{};
    sections.hdr = hdr.empty() ? 0 : kHdr;
    sections.hdr_size = hdr.size();
    sections.eh_frame = hdr.empty() ? kEhFrame : 0;
  }
  std::optional<CfiRow> row(uint64_t pc) const { return find_cfi_row(view, sections, pc); }
};

// Three functions at 0x1000, 0x2000 and 0x3000, 0x100 bytes each, with or without a header.
Tables three_functions(bool with_header, uint8_t table_encoding = 0x3b) {
  EhFrameBuilder b(kEhFrame);
  const uint64_t cie = b.add_cie(usual_cie());
  b.add_fde(cie, 0x3000, 0x100, Bytes{});
  b.add_fde(cie, 0x1000, 0x100, prologue_program());
  b.add_fde(cie, 0x2000, 0x100, Bytes{}.u8(DW_CFA_def_cfa_offset).uleb(32));
  Tables t;
  t.eh_frame = b.finish();
  if (with_header) t.hdr = b.header(kHdr, table_encoding);
  t.map();
  return t;
}

void expect_cfa(const std::optional<CfiRow>& row, int reg, int64_t offset) {
  ASSERT_TRUE(row);
  EXPECT_FALSE(row->cfa_is_expression);
  EXPECT_EQ(row->cfa_register, static_cast<uint64_t>(reg));
  EXPECT_EQ(row->cfa_offset, offset);
}

void expect_prologue_rows(const Tables& t) {
  expect_cfa(t.row(0x1000), kSp, 8);
  EXPECT_EQ(t.row(0x1000)->registers[kFp].kind, Kind::kSameValue);
  EXPECT_EQ(t.row(0x1000)->registers[kRa].kind, Kind::kOffset);
  EXPECT_EQ(t.row(0x1000)->registers[kRa].value, -8);
  for (uint64_t pc : {0x1001, 0x1003}) {
    expect_cfa(t.row(pc), kSp, 16);
    EXPECT_EQ(t.row(pc)->registers[kFp].kind, Kind::kOffset);
    EXPECT_EQ(t.row(pc)->registers[kFp].value, -16);
  }
  expect_cfa(t.row(0x1004), kFp, 16);
  expect_cfa(t.row(0x1023), kFp, 16);
  expect_cfa(t.row(0x1024), kSp, 8);
  EXPECT_EQ(t.row(0x1024)->registers[kFp].kind, Kind::kSameValue);
  for (uint64_t pc : {0x1025, 0x10ff}) {
    expect_cfa(t.row(pc), kFp, 16);
    EXPECT_EQ(t.row(pc)->registers[kFp].kind, Kind::kOffset);
  }
  expect_cfa(t.row(0x2080), kSp, 32);
  expect_cfa(t.row(0x3000), kSp, 8);
  for (uint64_t pc : {0x0fff, 0x1100, 0x1800, 0x30ff + 1, 0}) EXPECT_FALSE(t.row(pc)) << pc;
}

TEST(EhFrameParser, BinarySearchOfTheHeader) { expect_prologue_rows(three_functions(true)); }

TEST(EhFrameParser, LinearScanWithoutAHeader) { expect_prologue_rows(three_functions(false)); }

TEST(EhFrameParser, LinearScanWhenTheTableCannotBeSearched) {
  expect_prologue_rows(three_functions(true, /*uleb128*/ 0x01));
}

TEST(EhFrameParser, ReducesToTheSimpleShape) {
  Tables t = three_functions(true);
  std::vector<ExpressionRule> expressions;
  UnwindRule r = reduce_row(*t.row(0x1001), t.view, &expressions);
  EXPECT_EQ(r.kind, RuleKind::kSimple);
  EXPECT_EQ(r.cfa_register, kSp);
  EXPECT_EQ(r.cfa_offset, 16);
  EXPECT_TRUE(r.fp_saved);
  EXPECT_EQ(r.fp_offset, -16);
  EXPECT_EQ(r.ra_offset, -8);
  r = reduce_row(*t.row(0x1004), t.view, &expressions);
  EXPECT_EQ(r.kind, RuleKind::kSimple);
  EXPECT_EQ(r.cfa_register, kFp);
  EXPECT_TRUE(expressions.empty());
}

// Each pointer encoding the FDEs may use, and CIE versions 1 and 3.
TEST(EhFrameParser, PointerEncodingsAndCieVersions) {
  for (uint8_t encoding : {0x1b, 0x03, 0x04, 0x01, 0x00}) {
    for (uint8_t version : {1, 3}) {
      EhFrameBuilder b(kEhFrame);
      CieSpec spec = usual_cie();
      spec.fde_encoding = encoding;
      spec.version = version;
      b.add_fde(b.add_cie(spec), 0x5000, 0x40,
                Bytes{}.u8(DW_CFA_advance_loc | 8).u8(DW_CFA_def_cfa_offset).uleb(24));
      Tables t;
      t.eh_frame = b.finish();
      t.map();
      SCOPED_TRACE(::testing::Message() << "encoding " << int(encoding) << " v" << int(version));
      expect_cfa(t.row(0x5007), kSp, 8);
      expect_cfa(t.row(0x503f), kSp, 24);
      EXPECT_FALSE(t.row(0x5040));
    }
  }
}

// "zPLR": a personality pointer and an LSDA encoding to step over, FDE augmentation data to
// skip; "S" marks a signal frame, which never takes the simple shape.
TEST(EhFrameParser, AugmentationsPersonalityLsdaAndSignalFrames) {
  EhFrameBuilder b(kEhFrame);
  CieSpec personality = usual_cie();
  personality.augmentation = "zPLR";
  CieSpec signal = usual_cie();
  signal.augmentation = "zRS";
  CieSpec bti = usual_cie();
  bti.augmentation = "zRB";
  b.add_fde(b.add_cie(personality), 0x1000, 0x10, Bytes{}.u8(DW_CFA_def_cfa_offset).uleb(48),
            /*augmentation_bytes=*/4);
  b.add_fde(b.add_cie(signal), 0x2000, 0x10, Bytes{});
  b.add_fde(b.add_cie(bti), 0x3000, 0x10, Bytes{});
  Tables t;
  t.eh_frame = b.finish();
  t.hdr = b.header(kHdr);
  t.map();
  expect_cfa(t.row(0x1000), kSp, 48);
  EXPECT_FALSE(t.row(0x1000)->signal_frame);
  ASSERT_TRUE(t.row(0x2000));
  EXPECT_TRUE(t.row(0x2000)->signal_frame);
  expect_cfa(t.row(0x3000), kSp, 8);
  std::vector<ExpressionRule> expressions;
  const UnwindRule r = reduce_row(*t.row(0x2000), t.view, &expressions);
  EXPECT_EQ(r.kind, RuleKind::kExpression);
  EXPECT_TRUE(r.signal_frame);
  ASSERT_EQ(expressions.size(), 1u);
  EXPECT_TRUE(expressions[0].signal_frame);
}

// Every register instruction, and the operations they reduce to.
TEST(EhFrameParser, RegisterRulesAndExpressions) {
  Bytes p;
  p.u8(DW_CFA_def_cfa_expression).uleb(3).u8(DW_OP_breg0 + kSp).sleb(8).u8(DW_OP_deref);
  p.u8(DW_CFA_expression).uleb(3).uleb(2).u8(DW_OP_breg0 + kSp).sleb(-16);
  p.u8(DW_CFA_val_expression).uleb(4).uleb(2).u8(DW_OP_lit0 + 5).u8(DW_OP_plus);
  p.u8(DW_CFA_register).uleb(5).uleb(1);
  p.u8(DW_CFA_val_offset).uleb(2).uleb(3);
  p.u8(DW_CFA_val_offset_sf).uleb(8).sleb(-1);
  p.u8(DW_CFA_offset_extended).uleb(9).uleb(4);
  p.u8(DW_CFA_offset_extended_sf).uleb(10).sleb(2);
  p.u8(DW_CFA_GNU_negative_offset_extended).uleb(11).uleb(1);
  p.u8(DW_CFA_undefined).uleb(12).u8(DW_CFA_same_value).uleb(13);
  p.u8(DW_CFA_GNU_args_size).uleb(32).u8(DW_CFA_nop).u8(DW_CFA_GNU_window_save);
  p.u8(DW_CFA_offset_extended).uleb(200).uleb(1);  // a column the unwinder does not track
  EhFrameBuilder b(kEhFrame);
  b.add_fde(b.add_cie(usual_cie()), 0x1000, 0x10, p);
  Tables t;
  t.eh_frame = b.finish();
  t.map();
  const std::optional<CfiRow> row = t.row(0x1000);
  ASSERT_TRUE(row);
  EXPECT_TRUE(row->cfa_is_expression);
  EXPECT_EQ(row->registers[3].kind, Kind::kExpression);
  EXPECT_EQ(row->registers[4].kind, Kind::kValExpression);
  EXPECT_EQ(row->registers[5].kind, Kind::kRegister);
  EXPECT_EQ(row->registers[5].value, 1);
  EXPECT_EQ(row->registers[2].kind, Kind::kValOffset);
  EXPECT_EQ(row->registers[2].value, -24);
  EXPECT_EQ(row->registers[8].value, 8);
  EXPECT_EQ(row->registers[9].value, -32);
  EXPECT_EQ(row->registers[10].value, -16);
  EXPECT_EQ(row->registers[11].value, 8);
  EXPECT_EQ(row->registers[12].kind, Kind::kUndefined);
  EXPECT_EQ(row->registers[13].kind, Kind::kSameValue);

  std::vector<ExpressionRule> expressions;
  const UnwindRule r = reduce_row(*row, t.view, &expressions);
  ASSERT_EQ(r.kind, RuleKind::kExpression);
  const ExpressionRule& e = expressions[r.expression_index];
  ASSERT_EQ(e.cfa.size(), 2u);
  EXPECT_EQ(e.cfa[0].atom, DW_OP_breg0 + kSp);
  EXPECT_EQ(e.cfa[0].number, 8u);
  EXPECT_EQ(e.cfa[1].atom, DW_OP_deref);
  // expression: the CFA pushed first
  ASSERT_EQ(e.registers[3].ops.size(), 2u);
  EXPECT_EQ(e.registers[3].kind, RegisterRule::Kind::kAddress);
  EXPECT_EQ(e.registers[3].ops[0].atom, DW_OP_call_frame_cfa);
  EXPECT_EQ(e.registers[3].ops[1].number, static_cast<uint64_t>(-16));
  EXPECT_EQ(e.registers[4].kind, RegisterRule::Kind::kValue);
  ASSERT_EQ(e.registers[4].ops.size(), 3u);
  EXPECT_EQ(e.registers[5].kind, RegisterRule::Kind::kAddress);
  EXPECT_EQ(e.registers[5].ops[0].atom, DW_OP_regx);
  EXPECT_EQ(e.registers[2].kind, RegisterRule::Kind::kValue);
  ASSERT_EQ(e.registers[2].ops.size(), 2u);
  EXPECT_EQ(e.registers[2].ops[1].atom, DW_OP_plus_uconst);
  EXPECT_EQ(e.registers[2].ops[1].number, static_cast<uint64_t>(-24));
  EXPECT_EQ(e.registers[12].kind, RegisterRule::Kind::kUndefined);
  EXPECT_EQ(e.registers[13].kind, RegisterRule::Kind::kSame);
}

// An undefined return address ends the stack.
TEST(EhFrameParser, UndefinedReturnAddressIsTheOutermostFrame) {
  EhFrameBuilder b(kEhFrame);
  b.add_fde(b.add_cie(usual_cie()), 0x1000, 0x10, Bytes{}.u8(DW_CFA_undefined).uleb(kRa));
  Tables t;
  t.eh_frame = b.finish();
  t.map();
  std::vector<ExpressionRule> expressions;
  EXPECT_EQ(reduce_row(*t.row(0x1000), t.view, &expressions).kind, RuleKind::kEndOfStack);
}

// The program ends where its FDE does: no padding to read as DW_CFA_nop.
std::optional<CfiRow> row_of_program(const Bytes& program, uint64_t pc = 0x1008) {
  EhFrameBuilder b(kEhFrame);
  b.add_fde(b.add_cie(usual_cie()), 0x1000, 0x10, program, 0, /*pad=*/false);
  Tables t;
  t.eh_frame = b.finish();
  t.map();
  return t.row(pc);
}

TEST(EhFrameParser, MalformedProgramsGiveNoRow) {
  EXPECT_FALSE(row_of_program(Bytes{}.u8(DW_CFA_restore_state)));
  Bytes deep;
  for (int i = 0; i < 9; ++i) deep.u8(DW_CFA_remember_state);
  EXPECT_FALSE(row_of_program(deep));
  EXPECT_FALSE(row_of_program(Bytes{}.u8(0x3f)));                                 // unknown opcode
  EXPECT_FALSE(row_of_program(Bytes{}.u8(DW_CFA_def_cfa).uleb(7)));               // cut short
  EXPECT_FALSE(row_of_program(Bytes{}.u8(DW_CFA_expression).uleb(3).uleb(200)));  // past the end
  Bytes long_leb;
  long_leb.u8(DW_CFA_def_cfa_offset);
  for (int i = 0; i < 12; ++i) long_leb.u8(0x80);
  long_leb.u8(0);
  EXPECT_FALSE(row_of_program(long_leb));
  // A def_cfa_register after a CFA expression has no offset to keep.
  EXPECT_FALSE(row_of_program(Bytes{}
                                  .u8(DW_CFA_def_cfa_expression)
                                  .uleb(1)
                                  .u8(DW_OP_lit0)
                                  .u8(DW_CFA_def_cfa_register)
                                  .uleb(6)));
  // Instructions past the pc are not run, malformed or not.
  EXPECT_TRUE(row_of_program(Bytes{}.u8(DW_CFA_advance_loc | 15).u8(DW_CFA_restore_state)));
}

// Every prefix of the tables, and random damage to them: a row or none, never a crash or hang.
TEST(EhFrameParser, TruncatedAndCorruptedTablesNeverCrash) {
  const Tables good = three_functions(true);
  for (size_t cut = 0; cut < good.eh_frame.size(); ++cut) {
    for (size_t hdr_cut : {good.hdr.size(), cut % (good.hdr.size() + 1)}) {
      Tables t;
      t.eh_frame.assign(good.eh_frame.begin(), good.eh_frame.begin() + cut);
      t.hdr.assign(good.hdr.begin(), good.hdr.begin() + hdr_cut);
      t.map();
      for (uint64_t pc : {0x1000, 0x1024, 0x2010, 0x3000}) (void)t.row(pc);
    }
  }
  std::mt19937 random(7);
  int rows = 0;
  for (int round = 0; round < 20000; ++round) {
    Tables t;
    t.eh_frame = good.eh_frame;
    t.hdr = good.hdr;
    for (int flips = 1 + round % 4; flips > 0; --flips) {
      auto& bytes = random() % 4 ? t.eh_frame : t.hdr;
      bytes[random() % bytes.size()] = static_cast<uint8_t>(random());
    }
    t.map();
    std::vector<ExpressionRule> expressions;
    for (uint64_t pc : {0x1000, 0x1030, 0x2010, 0x3050}) {
      if (auto row = t.row(pc)) {
        ++rows;
        (void)reduce_row(*row, t.view, &expressions);
      }
    }
  }
  EXPECT_GT(rows, 0);
}

}  // namespace
}  // namespace inprof::internal
