// Text forms every stage of symbolicate writes the same way: bytes and numbers in hexadecimal,
// and the last component of a path.
#ifndef INPROF_TOOLS_SYMBOLICATE_TEXT_UTIL_H_
#define INPROF_TOOLS_SYMBOLICATE_TEXT_UTIL_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace inprof::symbolicate {

// Two lowercase hex digits a byte, in order, no prefix: {0xab, 0x01} -> "ab01" (build-ids,
// UUIDs, cache keys).
std::string hex_string(std::span<const uint8_t> bytes);

// "0x" and the value's lowercase hex digits, no leading zeros: 0x1a2b -> "0x1a2b", 0 -> "0x0".
std::string hex_u64(uint64_t value);

// The last component of a path a dump recorded: '/' separates, and so does '\' in a Windows path
// (one that starts with a drive: "C:\", "C:/"). "b" for "/a/b", "" for "/a/", the whole path
// when nothing separates it.
std::string basename_of(std::string_view path);

// The same with `separators` separating, whatever the path: "/" for a file on this system,
// "\\/" for a Windows path.
std::string basename_of(std::string_view path, std::string_view separators);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_TEXT_UTIL_H_
