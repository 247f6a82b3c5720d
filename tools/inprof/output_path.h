// Where `inprof record` tells the program to write its dump.
#ifndef INPROF_TOOLS_INPROF_OUTPUT_PATH_H_
#define INPROF_TOOLS_INPROF_OUTPUT_PATH_H_

#include <cstdint>
#include <optional>
#include <string>

namespace inprof::launcher {

// Makes `pattern` (with %p for the process id) absolute against the current directory, so that a
// process that changes directory still writes where the user meant, and checks that the dump of
// process `pid` (the program: exec keeps the launcher's pid) can be created there. On a problem,
// returns what is wrong, for one line of the form "-o PATH: <what>".
std::optional<std::string> resolve_output_path(std::string* pattern, uint64_t pid);

}  // namespace inprof::launcher

#endif  // INPROF_TOOLS_INPROF_OUTPUT_PATH_H_
