#include "read/jit_map.h"

#include <iterator>

namespace inprof::symbolicate {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string_view skip_spaces(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && is_space(s[i])) ++i;
  return s.substr(i);
}

// A hex number (an optional 0x, then at most 16 digits) at the front of `s`, which then
// continues after it. False if there is none, or it is followed by something other than a space.
bool take_hex(std::string_view& s, uint64_t* value) {
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  uint64_t v = 0;
  size_t n = 0;
  for (; n < s.size(); ++n) {
    char c = s[n];
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else {
      break;
    }
    if (n == 16) return false;  // more than 64 bits
    v = v << 4 | static_cast<uint64_t>(digit);
  }
  if (n == 0 || n == s.size() || !is_space(s[n])) return false;
  s.remove_prefix(n);
  *value = v;
  return true;
}

}  // namespace

void JitMap::add_piece(std::string_view text) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    add_line(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

void JitMap::add_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (skip_spaces(line).empty()) return;  // blank lines are harmless
  ++lines_;
  uint64_t start = 0, size = 0;
  std::string_view rest = skip_spaces(line);
  if (!take_hex(rest, &start)) return void(++malformed_);
  rest = skip_spaces(rest);
  if (!take_hex(rest, &size)) return void(++malformed_);
  std::string_view name = skip_spaces(rest);
  // Empty code, a range that wraps around, or no name: nothing a frame could resolve to.
  if (size == 0 || start + size < start || name.empty()) return void(++malformed_);
  if (name.size() > kMaxNameLength) name = name.substr(0, kMaxNameLength);

  uint32_t id;
  auto it = name_ids_.find(name);
  if (it != name_ids_.end()) {
    id = it->second;
  } else {
    if (name_bytes_ + name.size() > kMaxNameBytes) return void(++dropped_);
    id = static_cast<uint32_t>(names_.size());
    names_.emplace_back(name);
    name_ids_.emplace(names_.back(), id);
    name_bytes_ += name.size();
  }
  // One range can split another in two, so leave room for that.
  if (ranges_.size() + 2 > kMaxRanges) return void(++dropped_);
  insert(start, start + size, id);
}

void JitMap::insert(uint64_t start, uint64_t end, uint32_t name) {
  auto it = ranges_.lower_bound(start);
  // The range that starts before this one may reach into it: keep only its parts outside.
  if (it != ranges_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.end > start) {
      if (prev->second.end > end) ranges_.emplace(end, Range{prev->second.end, prev->second.name});
      prev->second.end = start;
    }
  }
  it = ranges_.lower_bound(start);
  while (it != ranges_.end() && it->first < end) {
    if (it->second.end > end) {
      Range tail{it->second.end, it->second.name};
      ranges_.erase(it);
      ranges_.emplace(end, tail);
      break;
    }
    it = ranges_.erase(it);
  }
  ranges_.emplace(start, Range{end, name});
}

const std::string* JitMap::find(uint64_t address) const {
  auto it = ranges_.upper_bound(address);
  if (it == ranges_.begin()) return nullptr;
  --it;
  return address < it->second.end ? &names_[it->second.name] : nullptr;
}

}  // namespace inprof::symbolicate
