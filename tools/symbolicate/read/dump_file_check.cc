#include "read/dump_file_check.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "dump/dump_records.h"

namespace inprof::symbolicate {

std::optional<std::string> why_not_a_dump(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  uint8_t head[internal::kDumpHeaderSize] = {};
  in.read(reinterpret_cast<char*>(head), sizeof head);
  return why_not_a_dump(path, std::span<const uint8_t>(head, static_cast<size_t>(in.gcount())));
}

std::optional<std::string> why_not_a_dump(const std::string& path, std::span<const uint8_t> start) {
  uint8_t head[internal::kDumpHeaderSize] = {};
  const size_t size = std::min(start.size(), sizeof head);
  std::memcpy(head, start.data(), size);
  const std::string name = "'" + path + "'";
  if (size == 0) {
    return name +
           " is empty: its process wrote nothing yet (still running? killed before its first "
           "write? a ring-mode session writes at stop, a capture or a crash: look for "
           "-capture-N and -crash files beside it)";
  }
  if (size >= 2 && head[0] == 0x1f && head[1] == 0x8b) {
    return name +
           " is gzip-compressed, not an inprof dump: a profile symbolicate wrote? Open it "
           "on https://profiler.firefox.com";
  }
  if (head[0] == '{' || head[0] == '[') {
    return name +
           " is JSON, not an inprof dump: a profile symbolicate wrote? Open it on "
           "https://profiler.firefox.com";
  }
  if (size >= sizeof internal::kDumpMagic &&
      std::memcmp(head, internal::kDumpMagic, sizeof internal::kDumpMagic) == 0) {
    if (size < internal::kDumpHeaderSize) {
      return name + " is cut short inside its header (" + std::to_string(size) + " bytes)";
    }
    return std::nullopt;
  }
  if (size < sizeof internal::kDumpMagic && std::memcmp(head, internal::kDumpMagic, size) == 0) {
    return name + " is cut short inside its header (" + std::to_string(size) + " bytes)";
  }
  return name +
         " is not an inprof dump (it does not start as one; dumps are what the library "
         "or `inprof record` writes, *.inprof)";
}

}  // namespace inprof::symbolicate
