// The whole conversion: read a dump, symbolize it, write the Firefox Profiler JSON.
#ifndef INPROF_TOOLS_SYMBOLICATE_SYMBOLICATE_H_
#define INPROF_TOOLS_SYMBOLICATE_SYMBOLICATE_H_

#include <cstdio>
#include <string>

namespace inprof::symbolicate {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

struct RunOptions {
  std::string dump_path;
  std::string output_path;  // "-" writes to stdout
};

// Returns the process exit status: kExitOk, or kExitError after printing one
// "symbolicate: error: ..." line to `err`. Warnings and statistics also go to `err`.
int run_symbolicate(const RunOptions& options, std::FILE* err);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_SYMBOLICATE_H_
