// Every setting a user can give, in one table: its environment variable, its `inprof record`
// flag, its field in inprof::Options and in the C API's inprof_options, what it means, its
// default (read from a default-constructed Options, never typed twice) and its range (from
// option_limits.h). INPROF_HELP and the guide's two tables are made from it; a test fails when
// the guide's copy drifts (tools/scripts/update-options-docs.sh writes it anew).
#ifndef INPROF_LIB_OPTIONS_OPTION_TABLE_H_
#define INPROF_LIB_OPTIONS_OPTION_TABLE_H_

#include <chrono>
#include <cstddef>
#include <span>
#include <string>

namespace inprof::internal {

struct OptionSpec {
  const char* variable;  // INPROF_*, or null (set in code only)
  const char* flag;      // `inprof record`'s, or null
  const char* field;     // inprof::Options's, or null (outside the library's options)
  const char* c_field;   // inprof_options's, or null
  const char* meaning;   // without the default or the range: those come from the functions below
  const char* example;   // a value of the variable
  std::string (*default_value)();  // null: none to state
  std::string (*range)();          // null: any value it accepts
  bool flag_takes_value = false;   // `flag VALUE` (else a switch: --ring, --no-cpu)
};

std::span<const OptionSpec> option_table();

// The guide's table of variables (variable, flag, meaning, default, example), Markdown.
std::string variables_markdown();

// The guide's table of Options fields (field, C field, default, range, meaning), Markdown.
std::string fields_markdown();

// INPROF_HELP's text.
std::string options_help();

// "5s" for 5'000'000'000 ns, "8M" for 8 MiB: limits and defaults read the way values are written.
std::string describe_duration(std::chrono::nanoseconds d);
std::string describe_bytes(size_t bytes);

}  // namespace inprof::internal

#endif  // INPROF_LIB_OPTIONS_OPTION_TABLE_H_
