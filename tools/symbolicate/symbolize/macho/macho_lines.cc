#include "symbolize/macho/macho_lines.h"

#include <cstring>

namespace inprof::symbolicate {
namespace {

constexpr size_t kMaxUnits = 1 << 20;

uint32_t le32(const std::vector<uint8_t>& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;  // Mach-O here is little-endian, as the host symbolicate runs on
}

uint64_t le64(const std::vector<uint8_t>& b, size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

}  // namespace

std::optional<MachOLines> MachOLines::read(const std::string& path, const MachOFile& dsym,
                                           std::string* why) {
  MachOLines out;
  const MachOSection* line = dsym.section("__DWARF", "__debug_line");
  if (!line || line->size == 0) {
    *why = "no __DWARF,__debug_line section";
    return std::nullopt;
  }
  if (!read_macho_section(path, dsym, *line, &out.line_, why)) return std::nullopt;
  // Strings are optional: a program that needs a missing one fails alone.
  std::string ignored;
  if (const MachOSection* s = dsym.section("__DWARF", "__debug_str")) {
    if (!read_macho_section(path, dsym, *s, &out.str_, &ignored)) out.str_.clear();
  }
  if (const MachOSection* s = dsym.section("__DWARF", "__debug_line_str")) {
    if (!read_macho_section(path, dsym, *s, &out.line_str_, &ignored)) out.line_str_.clear();
  }
  const LineSections sections{out.line_, out.line_str_, out.str_};
  // Line programs lie one after another: each starts with its unit_length.
  std::string first_failure;
  for (uint64_t at = 0; at + 4 <= out.line_.size() && out.tables_.size() < kMaxUnits;) {
    uint64_t length = le32(out.line_, at), header = 4;
    if (length == 0xffffffffu) {
      if (at + 12 > out.line_.size()) break;
      length = le64(out.line_, at + 4);
      header = 12;
    }
    if (length > out.line_.size() - at - header) break;
    LineTable::Options options;
    options.offset = at;
    std::string failure;
    if (auto table = LineTable::parse(sections, options, &failure)) {
      out.tables_.push_back(std::move(*table));
    } else if (first_failure.empty()) {
      first_failure = failure;
    }
    at += header + length;
  }
  if (out.tables_.empty()) {
    *why = "no readable line program in __debug_line" +
           (first_failure.empty() ? std::string() : " (" + first_failure + ")");
    return std::nullopt;
  }
  return out;
}

std::optional<MachOLines::Line> MachOLines::find(uint64_t vaddr) const {
  for (const LineTable& table : tables_) {
    std::optional<LineTable::Location> at = table.find(vaddr);
    if (!at) continue;
    Line out;
    if (at->file < table.files().size()) out.file = table.files()[at->file];
    if (at->line > 0 && at->line <= INT32_MAX) out.line = static_cast<uint32_t>(at->line);
    return out;
  }
  return std::nullopt;
}

}  // namespace inprof::symbolicate
