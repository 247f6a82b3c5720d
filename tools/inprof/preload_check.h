// Whether LD_PRELOAD can reach a program at all: a statically linked one has no dynamic loader to
// honour it, and would run unprofiled without a word.
#ifndef INPROF_TOOLS_INPROF_PRELOAD_CHECK_H_
#define INPROF_TOOLS_INPROF_PRELOAD_CHECK_H_

#include <optional>
#include <string>

namespace inprof::launcher {

// The program execvp() would run for `name` (searched in PATH unless it has a '/'); nothing if
// none is found (exec then reports that itself).
std::optional<std::string> find_program(const std::string& name);

// Why a preloaded library cannot run in the ELF executable at `path` ("it is statically
// linked"), or nothing if it can or this cannot tell (not ELF, such as a script: its interpreter
// is what runs).
std::optional<std::string> preload_obstacle(const std::string& path);

}  // namespace inprof::launcher

#endif  // INPROF_TOOLS_INPROF_PRELOAD_CHECK_H_
