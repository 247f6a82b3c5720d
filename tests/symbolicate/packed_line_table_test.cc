// The module index's packed line table (packed_line_table.h) answers every address exactly as
// the LineTable it was packed from: across block boundaries, at addresses with many rows, rows
// that end sequences, gaps between sequences, and below and above all rows.
#include "symbolize/packed_line_table.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace {

using inprof::symbolicate::LineTable;
using inprof::symbolicate::PackedLineTable;

// Rows in address order; at one address the rows ending a sequence first, as parse() puts them.
std::vector<LineTable::Row> random_rows(std::mt19937& random, size_t n) {
  std::vector<LineTable::Row> rows;
  uint64_t address = 0x1000 + random() % 64;
  while (rows.size() < n) {
    const size_t at_once = random() % 8 == 0 ? 1 + random() % 40 : 1;  // long runs cross blocks
    const size_t ends = random() % 5 == 0 ? 1 + random() % 2 : 0;
    for (size_t k = 0; k < at_once + ends && rows.size() < n; ++k) {
      rows.push_back({address, static_cast<int64_t>(random() % 3000) - 5,
                      static_cast<uint32_t>(random() % 7), k < ends});
    }
    address += random() % 4 == 0 ? 0 : 1 + random() % (random() % 10 == 0 ? 5000 : 12);
  }
  return rows;
}

void expect_same_answers(const LineTable& table) {
  const PackedLineTable packed = PackedLineTable::pack(table);
  ASSERT_EQ(packed.files(), table.files());
  // The parts as written and read back.
  auto back = PackedLineTable::from_parts(packed.files(), packed.rows(), packed.last_address(),
                                          packed.blocks(), packed.packed());
  ASSERT_TRUE(back);
  const auto& rows = table.rows();
  const uint64_t low = rows.empty() ? 0 : rows.front().address - 3;
  const uint64_t high = rows.empty() ? 16 : rows.back().address + 3;
  for (uint64_t a = low; a <= high; ++a) {
    std::optional<LineTable::Location> found;
    ASSERT_TRUE(back->find(a, &found)) << std::hex << a;
    const auto expected = table.find(a);
    ASSERT_EQ(found.has_value(), expected.has_value()) << std::hex << a;
    if (expected) {
      EXPECT_EQ(found->file, expected->file) << std::hex << a;
      EXPECT_EQ(found->line, expected->line) << std::hex << a;
    }
  }
}

TEST(PackedLineTable, AnswersAsTheLineTableAtEveryAddress) {
  std::mt19937 random(25);
  for (size_t n : {0, 1, 2, 31, 32, 33, 100, 1000, 5000}) {
    for (int round = 0; round < 4; ++round) {
      auto table = LineTable::from_parts({"???", "a.c", "b.h"}, random_rows(random, n));
      ASSERT_TRUE(table);
      expect_same_answers(*table);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(PackedLineTable, BlocksStartAtTheFirstRowOfTheirAddress) {
  // 100 rows at one address: one block, however many rows it holds; the next address starts
  // the next.
  std::vector<LineTable::Row> rows;
  for (int i = 0; i < 100; ++i) rows.push_back({0x2000, i, 1, false});
  rows.push_back({0x2010, 7, 1, true});
  auto table = LineTable::from_parts({"???", "a.c"}, rows);
  ASSERT_TRUE(table);
  const PackedLineTable packed = PackedLineTable::pack(*table);
  ASSERT_EQ(packed.blocks().size(), 2u);
  EXPECT_EQ(packed.blocks()[1].address, 0x2010u);
  expect_same_answers(*table);
}

TEST(PackedLineTable, PartsThatDoNotFitAreRefused) {
  std::mt19937 random(7);
  auto table = LineTable::from_parts({"???", "a.c"}, random_rows(random, 500));
  ASSERT_TRUE(table);
  const PackedLineTable p = PackedLineTable::pack(*table);
  ASSERT_GT(p.blocks().size(), 2u);
  auto blocks = p.blocks();
  std::swap(blocks[1], blocks[2]);  // out of order
  EXPECT_FALSE(
      PackedLineTable::from_parts(p.files(), p.rows(), p.last_address(), blocks, p.packed()));
  blocks = p.blocks();
  blocks.back().offset = p.packed().size();  // outside the bytes
  EXPECT_FALSE(
      PackedLineTable::from_parts(p.files(), p.rows(), p.last_address(), blocks, p.packed()));
  EXPECT_FALSE(PackedLineTable::from_parts(p.files(), p.rows(), p.last_address(), {},
                                           p.packed()));  // rows but no block
  // Bytes cut short inside the last block: a look-up there says it cannot tell.
  std::string cut(p.packed());
  cut.resize(p.blocks().back().offset + 1);
  auto damaged = PackedLineTable::from_parts(p.files(), p.rows(), p.last_address(), p.blocks(),
                                             cut + std::string(p.rows() * 3, '\xff'));
  ASSERT_TRUE(damaged);
  std::optional<LineTable::Location> found;
  EXPECT_FALSE(damaged->find(p.last_address() - 1, &found));
}

}  // namespace
