// A structural checker for Firefox Profiler processed-format profiles (version 66), the format
// `symbolicate` writes. The profiler itself validates almost nothing on load: an out-of-range
// index is dropped silently or breaks a panel later. This checker finds such damage up front and
// depends on nothing from the profiler. See shared/notes/firefox-profiler-format.md.
#ifndef INPROF_TESTS_SUPPORT_PROFILE_CHECKER_H_
#define INPROF_TESTS_SUPPORT_PROFILE_CHECKER_H_

#include <rapidjson/document.h>

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace inprof::test_support {

// The processed-format version the checker (and symbolicate) expects.
inline constexpr int kProcessedProfileVersion = 66;

// Every problem found in `profile`, one sentence each, starting with the JSON path it concerns.
// Empty means the profile is well formed.
std::vector<std::string> check_profile(const rapidjson::Value& profile);

struct CheckResult {
  bool parsed = false;  // false: `error` says why the text is not JSON
  std::string error;
  std::vector<std::string> problems;  // when parsed
};

// Parses JSON text, then checks it.
CheckResult check_profile_text(std::string_view json);

// The `profile_check` command: checks the file at `path`, prints problems to `out` and errors to
// `err`. Returns 0 when well formed, 1 when problems were found, 2 when the file cannot be read
// or is not JSON.
int run_profile_check(const std::string& path, std::ostream& out, std::ostream& err);

}  // namespace inprof::test_support

#endif  // INPROF_TESTS_SUPPORT_PROFILE_CHECKER_H_
