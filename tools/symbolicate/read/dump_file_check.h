// What a file given as a dump is when it is not one: empty (a process still running, or one that
// wrote nothing), too short, a profile symbolicate already wrote (JSON, gzip). One line that
// names the file and says what to do, instead of "bad magic number".
#ifndef INPROF_TOOLS_SYMBOLICATE_DUMP_FILE_CHECK_H_
#define INPROF_TOOLS_SYMBOLICATE_DUMP_FILE_CHECK_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace inprof::symbolicate {

// Nothing if `path` starts like a dump (or cannot be opened: the reader says why); else why not.
std::optional<std::string> why_not_a_dump(const std::string& path);
// The same for the file's bytes already read (its first kDumpHeaderSize bytes are enough).
std::optional<std::string> why_not_a_dump(const std::string& path, std::span<const uint8_t> start);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_DUMP_FILE_CHECK_H_
