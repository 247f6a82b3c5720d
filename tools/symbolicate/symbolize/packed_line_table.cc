#include "symbolize/packed_line_table.h"

#include <algorithm>
#include <climits>
#include <memory>
#include <utility>

#include "symbolize/byte_io.h"

namespace inprof::symbolicate {

// Each row: the address's step from the row before (0 at a block's start), the line's change
// (zigzag), and the file with the end-of-sequence bit.
PackedLineTable PackedLineTable::pack(const LineTable& table) {
  PackedLineTable out;
  out.files_ = table.files();
  const std::vector<LineTable::Row>& rows = table.rows();
  out.rows_ = rows.size();
  if (rows.empty()) return out;
  auto packed = std::make_shared<std::string>();
  out.last_address_ = rows.back().address;
  uint64_t address = 0;
  int64_t line = 0;
  size_t in_block = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const LineTable::Row& r = rows[i];
    if (i == 0 || (in_block >= kBlockRows && r.address != rows[i - 1].address)) {
      out.blocks_.push_back({r.address, packed->size()});
      address = 0;
      line = 0;
      in_block = 0;
    }
    ++in_block;
    put_varint(*packed, r.address - address);
    const uint64_t delta = static_cast<uint64_t>(r.line) - static_cast<uint64_t>(line);
    put_varint(*packed, (delta << 1) ^ (0 - (delta >> 63)));  // zigzag
    put_varint(*packed, (uint64_t(r.file) << 1) | (r.end_sequence ? 1 : 0));
    address = r.address;
    line = r.line;
  }
  out.packed_ = *packed;
  out.owner_ = std::move(packed);
  return out;
}

std::optional<PackedLineTable> PackedLineTable::from_parts(std::vector<std::string> files,
                                                           uint64_t rows, uint64_t last_address,
                                                           std::vector<Block> blocks,
                                                           std::string_view packed,
                                                           std::shared_ptr<const void> owner) {
  if ((rows == 0) != blocks.empty() || blocks.size() > rows || packed.size() < rows * 3) {
    return std::nullopt;
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Block& b = blocks[i];
    if (b.offset >= packed.size() || (i == 0 && b.offset != 0) ||
        (i > 0 && (blocks[i - 1].address >= b.address || blocks[i - 1].offset >= b.offset))) {
      return std::nullopt;
    }
  }
  if (!blocks.empty() && blocks.back().address > last_address) return std::nullopt;
  PackedLineTable out;
  out.files_ = std::move(files);
  out.rows_ = rows;
  out.last_address_ = last_address;
  out.blocks_ = std::move(blocks);
  if (!owner) {  // a copy of its own
    auto copy = std::make_shared<std::string>(packed);
    packed = *copy;
    owner = std::move(copy);
  }
  out.packed_ = packed;
  out.owner_ = std::move(owner);
  return out;
}

bool PackedLineTable::find(uint64_t address, std::optional<LineTable::Location>* out) const {
  out->reset();
  // As LineTable::find: nothing at or above the highest row's address, nor below the first.
  if (rows_ == 0 || address >= last_address_) return true;
  auto next = std::upper_bound(blocks_.begin(), blocks_.end(), address,
                               [](uint64_t a, const Block& b) { return a < b.address; });
  if (next == blocks_.begin()) return true;
  const Block& block = *(next - 1);
  const auto* base = reinterpret_cast<const unsigned char*>(packed_.data());
  const unsigned char* p = base + block.offset;
  const unsigned char* end = base + (next == blocks_.end() ? packed_.size() : next->offset);
  uint64_t row_address = 0, line = 0;
  bool first = true;
  uint64_t at = 0;  // the address of the rows seen last
  while (p < end) {
    uint64_t step, zigzag, file;
    if (!get_varint(p, end, &step) || !get_varint(p, end, &zigzag) || !get_varint(p, end, &file) ||
        (file >> 1) > UINT32_MAX || row_address + step < row_address ||
        (first && row_address + step != block.address)) {
      return false;
    }
    row_address += step;
    line += (zigzag >> 1) ^ (0 - (zigzag & 1));
    if (row_address > address) break;
    if (first || row_address != at) {
      at = row_address;
      out->reset();  // the last row at the greatest address <= `address` that starts code
    }
    first = false;
    if (!(file & 1))
      *out = LineTable::Location{static_cast<uint32_t>(file >> 1), static_cast<int64_t>(line)};
  }
  return true;
}

}  // namespace inprof::symbolicate
