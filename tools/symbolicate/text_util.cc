#include "text_util.h"

#include <cinttypes>
#include <cstdio>

namespace inprof::symbolicate {

std::string hex_string(std::span<const uint8_t> bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

std::string hex_u64(uint64_t value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, value);
  return buf;
}

std::string basename_of(std::string_view path) {
  const bool windows = path.size() > 2 && path[1] == ':' && (path[2] == '\\' || path[2] == '/');
  return basename_of(path, windows ? "\\/" : "/");
}

std::string basename_of(std::string_view path, std::string_view separators) {
  const size_t slash = path.find_last_of(separators);
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

}  // namespace inprof::symbolicate
