// The dumps one symbolicate run reads: files named on the command line, and directories (such as
// the one `inprof record` writes a program's and its children's dumps into), which stand for
// the *.inprof files they hold.
#ifndef INPROF_TOOLS_SYMBOLICATE_DUMP_SET_H_
#define INPROF_TOOLS_SYMBOLICATE_DUMP_SET_H_

#include <optional>
#include <string>
#include <vector>

namespace inprof::symbolicate {

// Each argument as it is, or, for a directory, its *.inprof files in name order (crash captures
// and flight-recorder captures included). On an argument that is neither a file nor a directory
// with dumps, returns nothing and sets `error` to one line naming it.
std::optional<std::vector<std::string>> expand_dump_paths(const std::vector<std::string>& args,
                                                          std::string* error);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_DUMP_SET_H_
