#include "symbolize/line_table.h"

#include <algorithm>
#include <cstring>

namespace inprof::symbolicate {
namespace {

// DWARF constants (dwarf.h is libdw's; this file stays free of it).
constexpr uint8_t kCopy = 1, kAdvancePc = 2, kAdvanceLine = 3, kSetFile = 4, kConstAddPc = 8,
                  kFixedAdvancePc = 9;
constexpr uint8_t kEndSequence = 1, kSetAddress = 2, kDefineFile = 3;
constexpr uint64_t kPath = 1, kDirectoryIndex = 2;  // DW_LNCT_*
constexpr uint64_t kFormBlock2 = 0x03, kFormBlock4 = 0x04, kFormData2 = 0x05, kFormData4 = 0x06,
                   kFormData8 = 0x07, kFormString = 0x08, kFormBlock = 0x09, kFormBlock1 = 0x0a,
                   kFormData1 = 0x0b, kFormUdata = 0x0f, kFormStrp = 0x0e, kFormData16 = 0x1e,
                   kFormLineStrp = 0x1f;
constexpr size_t kMaxEntries = 1 << 20;  // directories or files: corrupt counts stop here

// Bounded little-endian reads over one span; any read past the end sets failed() and returns 0.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> data, size_t pos = 0) : data_(data), pos_(pos) {
    if (pos_ > data_.size()) fail();
  }
  bool failed() const { return failed_; }
  size_t pos() const { return pos_; }
  size_t left() const { return data_.size() - pos_; }
  bool at_end() const { return pos_ >= data_.size(); }

  uint64_t fixed(size_t n) {
    if (left() < n) return fail();
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(data_[pos_ + i]) << (8 * i);
    pos_ += n;
    return v;
  }
  uint8_t u8() { return static_cast<uint8_t>(fixed(1)); }
  uint64_t uleb() {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      if (at_end()) return fail();
      uint8_t b = data_[pos_++];
      if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  }
  int64_t sleb() {
    int64_t v = 0;
    int shift = 0;
    uint8_t b;
    do {
      if (at_end()) return static_cast<int64_t>(fail());
      b = data_[pos_++];
      if (shift < 64) v |= int64_t(b & 0x7f) << shift;
      shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40)) v |= -(int64_t(1) << shift);
    return v;
  }
  // A NUL-terminated string in place.
  const char* cstr() {
    const void* nul = std::memchr(data_.data() + pos_, 0, left());
    if (!nul) return fail(), nullptr;
    const char* s = reinterpret_cast<const char*>(data_.data() + pos_);
    pos_ = static_cast<const uint8_t*>(nul) - data_.data() + 1;
    return s;
  }
  void skip(uint64_t n) {
    if (left() < n)
      fail();
    else
      pos_ += n;
  }

 private:
  uint64_t fail() {
    failed_ = true;
    pos_ = data_.size();
    return 0;
  }
  std::span<const uint8_t> data_;
  size_t pos_;
  bool failed_ = false;
};

// A string at `offset` of a string section, or null.
const char* string_at(std::span<const uint8_t> section, uint64_t offset) {
  if (offset >= section.size()) return nullptr;
  const char* s = reinterpret_cast<const char*>(section.data() + offset);
  return std::memchr(s, 0, section.size() - offset) ? s : nullptr;
}

// libdw's name for a file: absolute names as they are, others behind their directory (itself
// left as recorded, relative or not), or bare without one.
std::string file_name(const char* name, const char* dir) {
  if (name[0] == '/' || !dir) return name;
  std::string out = dir;
  out += '/';
  out += name;
  return out;
}

struct EntryFormat {
  uint64_t content, form;
};

// One DWARF 5 directory or file entry: the path and directory index it holds.
bool read_entry(Reader& r, const std::vector<EntryFormat>& formats, const LineSections& s,
                bool dwarf64, const char** path, uint64_t* dir, std::string* why) {
  *path = nullptr;
  *dir = 0;
  for (const EntryFormat& f : formats) {
    uint64_t value = 0;
    const char* str = nullptr;
    switch (f.form) {
      case kFormString:
        str = r.cstr();
        break;
      case kFormLineStrp:
      case kFormStrp: {
        uint64_t off = r.fixed(dwarf64 ? 8 : 4);
        str = string_at(f.form == kFormLineStrp ? s.line_str : s.str, off);
        if (!str && !r.failed()) return *why = "string offset out of range", false;
        break;
      }
      case kFormUdata:
        value = r.uleb();
        break;
      case kFormData1:
        value = r.fixed(1);
        break;
      case kFormData2:
        value = r.fixed(2);
        break;
      case kFormData4:
        value = r.fixed(4);
        break;
      case kFormData8:
        value = r.fixed(8);
        break;
      case kFormData16:
        r.skip(16);
        break;
      case kFormBlock:
        r.skip(r.uleb());
        break;
      case kFormBlock1:
        r.skip(r.fixed(1));
        break;
      case kFormBlock2:
        r.skip(r.fixed(2));
        break;
      case kFormBlock4:
        r.skip(r.fixed(4));
        break;
      default:
        return *why = "unsupported form " + std::to_string(f.form) + " in the line header", false;
    }
    if (f.content == kPath) *path = str;
    if (f.content == kDirectoryIndex) *dir = value;
  }
  if (r.failed()) return *why = "truncated line header", false;
  return true;
}

}  // namespace

std::optional<LineTable> LineTable::parse(const LineSections& s, const Options& o,
                                          std::string* why) {
  Reader r(s.line, o.offset);
  uint64_t length = r.fixed(4);
  bool dwarf64 = false;
  if (length == 0xffffffff) {
    dwarf64 = true;
    length = r.fixed(8);
  } else if (length >= 0xfffffff0) {
    *why = "reserved unit length";
    return std::nullopt;
  }
  if (r.failed() || length > r.left()) {
    *why = "line program runs past .debug_line";
    return std::nullopt;
  }
  const size_t unit_end = r.pos() + length;
  const uint16_t version = static_cast<uint16_t>(r.fixed(2));
  if (version < 2 || version > 5) {
    *why = "line table version " + std::to_string(version);
    return std::nullopt;
  }
  uint8_t address_size = o.unit_address_size;
  if (version >= 5) {
    address_size = r.u8();
    if (r.u8() != 0) {
      *why = "segment selectors";
      return std::nullopt;
    }
  }
  const uint64_t header_length = r.fixed(dwarf64 ? 8 : 4);
  if (r.failed() || header_length > unit_end - r.pos()) {
    *why = "line header runs past its unit";
    return std::nullopt;
  }
  const size_t program_start = r.pos() + header_length;
  const uint8_t min_inst_length = r.u8();
  const uint8_t max_ops = version >= 4 ? r.u8() : 1;
  const bool default_is_stmt = r.u8() != 0;
  (void)default_is_stmt;  // rows keep no is_stmt: lookups use every row, as libdw's do
  const int8_t line_base = static_cast<int8_t>(r.u8());
  const uint8_t line_range = r.u8();
  const uint8_t opcode_base = r.u8();
  if (r.failed() || program_start > unit_end) {
    *why = "truncated line header";
    return std::nullopt;
  }
  if (max_ops != 1 || line_range == 0 || opcode_base == 0 ||
      (address_size != 4 && address_size != 8)) {
    *why = "unsupported line program parameters";
    return std::nullopt;
  }
  uint8_t opcode_lengths[256] = {};
  for (unsigned i = 1; i < opcode_base; ++i) opcode_lengths[i] = r.u8();

  LineTable table;
  std::vector<const char*> dirs;
  if (version < 5) {
    dirs.push_back(o.comp_dir);
    while (!r.failed() && dirs.size() < kMaxEntries) {
      const char* d = r.cstr();
      if (!d || !*d) break;
      dirs.push_back(d);
    }
    table.files_.push_back("???");
    while (!r.failed() && table.files_.size() < kMaxEntries) {
      const char* name = r.cstr();
      if (!name || !*name) break;
      uint64_t dir = r.uleb();
      r.uleb();  // modification time
      r.uleb();  // length
      table.files_.push_back(file_name(name, dir < dirs.size() ? dirs[dir] : nullptr));
    }
  } else {
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<EntryFormat> formats(r.u8());
      for (EntryFormat& f : formats) f = {r.uleb(), r.uleb()};
      const uint64_t count = r.uleb();
      if (r.failed() || count > kMaxEntries) {
        *why = "truncated line header";
        return std::nullopt;
      }
      for (uint64_t i = 0; i < count; ++i) {
        const char* path;
        uint64_t dir;
        if (!read_entry(r, formats, s, dwarf64, &path, &dir, why)) return std::nullopt;
        if (pass == 0) {
          dirs.push_back(path);
        } else {
          table.files_.push_back(path ? file_name(path, dir < dirs.size() ? dirs[dir] : nullptr)
                                      : "???");
        }
      }
    }
  }
  if (r.failed() || r.pos() > program_start) {
    *why = "truncated line header";
    return std::nullopt;
  }
  if (!o.with_rows) return table;

  // The state machine. Rows of one sequence come out in address order in a linked program; the
  // sequences are then ordered by their first address.
  struct Sequence {
    size_t begin, end;  // rows
    uint64_t low, high;
    bool sorted;
  };
  std::vector<Sequence> sequences;
  std::vector<Row>& rows = table.rows_;
  // Linked programs spend 5 to 7 bytes per row; reserving for 5 avoids most regrowth.
  rows.reserve((unit_end - program_start) / 5 + 16);
  Reader p(s.line.first(unit_end), program_start);
  uint64_t address = 0;
  int64_t line = 1;
  uint32_t file = 1;
  size_t sequence_begin = 0;
  bool sorted = true;
  auto emit = [&]() {
    if (rows.size() > sequence_begin && address < rows.back().address) sorted = false;
    rows.push_back({address, line, file, false});
  };
  auto end_sequence = [&]() {
    emit();
    rows.back().end_sequence = true;
    sequences.push_back(
        {sequence_begin, rows.size(), rows[sequence_begin].address, address, sorted});
    sequence_begin = rows.size();
    sorted = true;
    address = 0;
    line = 1;
    file = 1;
  };
  const uint64_t const_add = min_inst_length * ((255u - opcode_base) / line_range);
  while (!p.at_end() && !p.failed()) {
    const uint8_t op = p.u8();
    if (op >= opcode_base) {
      const unsigned adjusted = op - opcode_base;
      address += min_inst_length * (adjusted / line_range);
      line += line_base + static_cast<int>(adjusted % line_range);
      emit();
      continue;
    }
    switch (op) {
      case 0: {
        const uint64_t len = p.uleb();
        if (len == 0 || len > p.left()) {
          p.skip(len);
          break;
        }
        const size_t next = p.pos() + len;
        const uint8_t sub = p.u8();
        if (sub == kEndSequence) {
          end_sequence();
        } else if (sub == kSetAddress) {
          if (len - 1 != address_size) {
            *why = "DW_LNE_set_address of " + std::to_string(len - 1) + " bytes";
            return std::nullopt;
          }
          address = p.fixed(address_size);
        } else if (sub == kDefineFile && version < 5) {
          const char* name = p.cstr();
          const uint64_t dir = p.uleb();
          if (name)
            table.files_.push_back(file_name(name, dir < dirs.size() ? dirs[dir] : nullptr));
        }
        p = Reader(s.line.first(unit_end), next);
        break;
      }
      case kCopy:
        emit();
        break;
      case kAdvancePc:
        address += min_inst_length * p.uleb();
        break;
      case kAdvanceLine:
        line += p.sleb();
        break;
      case kSetFile:
        file = static_cast<uint32_t>(std::min<uint64_t>(p.uleb(), UINT32_MAX));
        break;
      case kConstAddPc:
        address += const_add;
        break;
      case kFixedAdvancePc:
        address += p.fixed(2);
        break;
      default:
        for (unsigned i = 0; i < opcode_lengths[op]; ++i) p.uleb();
        break;
    }
  }
  if (p.failed()) {
    *why = "truncated line program";
    return std::nullopt;
  }
  rows.resize(sequence_begin);  // rows after the last end_sequence belong to no sequence

  // libdw sorts every row by address, rows that end a sequence before others at the same
  // address, then by position in the program. Concatenating sorted sequences in order of their
  // first address gives the same answers when no two sequences share an address with a row
  // that does not end one; otherwise (overlapping sequences, such as discarded functions all at
  // address 0) sort the rows the same way.
  std::stable_sort(sequences.begin(), sequences.end(),
                   [](const Sequence& a, const Sequence& b) { return a.low < b.low; });
  bool simple = true;
  for (size_t i = 0; i < sequences.size() && simple; ++i) {
    const Sequence& q = sequences[i];
    if (!q.sorted) simple = false;
    if (i > 0) {
      const Sequence& before = sequences[i - 1];
      // `before` may end where `q` starts, if its last non-ending row lies below that address.
      const bool touches = q.low == before.high && before.end - before.begin >= 2 &&
                           rows[before.end - 2].address == before.high;
      if (q.low < before.high || touches) simple = false;
    }
  }
  if (simple) {
    bool in_order = true;
    for (size_t i = 0; i < sequences.size() && in_order; ++i) {
      in_order = sequences[i].begin == (i ? sequences[i - 1].end : 0);
    }
    if (!in_order) {
      std::vector<Row> ordered;
      ordered.reserve(rows.size());
      for (const Sequence& q : sequences) {
        ordered.insert(ordered.end(), rows.begin() + q.begin, rows.begin() + q.end);
      }
      rows.swap(ordered);
    }
  } else {
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
      if (a.address != b.address) return a.address < b.address;
      return a.end_sequence && !b.end_sequence;
    });
  }
  return table;
}

std::optional<LineTable> LineTable::from_parts(std::vector<std::string> files,
                                               std::vector<Row> rows) {
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i - 1].address > rows[i].address) return std::nullopt;
  }
  LineTable table;
  table.files_ = std::move(files);
  table.rows_ = std::move(rows);
  return table;
}

std::optional<LineTable::Location> LineTable::find(uint64_t address) const {
  // libdw marks the unit's last row (in its order) as ending a sequence, whatever the program
  // says, so nothing is found at or above the unit's highest row address.
  if (rows_.empty() || address >= rows_.back().address) return std::nullopt;
  auto it = std::upper_bound(rows_.begin(), rows_.end(), address,
                             [](uint64_t a, const Row& r) { return a < r.address; });
  if (it == rows_.begin()) return std::nullopt;
  const uint64_t at = (it - 1)->address;
  // The last row at that address, unless it ends a sequence (those sort first at an address,
  // so then no row there starts code).
  const Row& last = *(it - 1);
  if (!last.end_sequence) return Location{last.file, last.line};
  for (auto r = it - 1; r != rows_.begin() && (r - 1)->address == at;) {
    --r;
    if (!r->end_sequence) return Location{r->file, r->line};
  }
  return std::nullopt;
}

}  // namespace inprof::symbolicate
