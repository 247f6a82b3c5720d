// A unit's line table as the module index keeps it (module_index.h): its rows delta-encoded as
// variable-length integers, in blocks of about kBlockRows rows, each block found by its first
// row's address. A look-up decodes the one block that holds the address, so a warm run that asks
// a few addresses of a unit of 100,000 rows neither decodes nor allocates the other rows (whole
// tables were most of a warm run's decoding: 510,000 rows, 12 MB, for 460 addresses).
//
// find() answers exactly as LineTable::find on the table that was packed. A block starts only
// at the first row of its address, so every row at the address found is in the block searched.
#ifndef INPROF_TOOLS_SYMBOLICATE_PACKED_LINE_TABLE_H_
#define INPROF_TOOLS_SYMBOLICATE_PACKED_LINE_TABLE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "symbolize/line_table.h"

namespace inprof::symbolicate {

class PackedLineTable {
 public:
  static constexpr size_t kBlockRows = 32;
  struct Block {
    uint64_t address;  // of its first row, the first row at that address
    uint64_t offset;   // of its first row in packed(); that row is encoded from address 0, line 0
  };

  PackedLineTable() = default;
  static PackedLineTable pack(const LineTable& table);
  // The parts as packed; nullopt when they do not fit together (blocks out of order or outside
  // the bytes). The rows themselves are checked as find() decodes them. `owner` given: the rows
  // are left where they lie, in bytes it keeps (a mapped cache file: no copy); else copied.
  static std::optional<PackedLineTable> from_parts(std::vector<std::string> files, uint64_t rows,
                                                   uint64_t last_address, std::vector<Block> blocks,
                                                   std::string_view packed,
                                                   std::shared_ptr<const void> owner = nullptr);

  // LineTable::find of the table packed, in *out. False when the block that holds the address
  // is damaged (cannot be decoded, rows out of order): the table cannot tell.
  bool find(uint64_t address, std::optional<LineTable::Location>* out) const;

  const std::vector<std::string>& files() const { return files_; }
  uint64_t rows() const { return rows_; }
  uint64_t last_address() const { return last_address_; }
  const std::vector<Block>& blocks() const { return blocks_; }
  std::string_view packed() const { return packed_; }

 private:
  std::vector<std::string> files_;
  uint64_t rows_ = 0;
  uint64_t last_address_ = 0;  // the highest row's address
  std::vector<Block> blocks_;
  std::shared_ptr<const void> owner_;  // keeps packed_'s bytes: its own, or a file's
  std::string_view packed_;
};

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_PACKED_LINE_TABLE_H_
