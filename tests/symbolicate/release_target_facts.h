// What the release target (release_target.cc, built by the compiler of the build or by clang)
// prints when run: the addresses the tests put in dumps and the lines they must resolve to.
#ifndef INPROF_TESTS_SYMBOLICATE_RELEASE_TARGET_FACTS_H_
#define INPROF_TESTS_SYMBOLICATE_RELEASE_TARGET_FACTS_H_

#include <cstdint>
#include <string>

namespace symtest {

struct TargetFacts {
  uint64_t leaf = 0;  // ELF virtual addresses
  int leaf_line = 0;
  uint64_t inline_return = 0;
  int helper_call_line = 0;
  int outer_line = 0;
};

// Runs the program at `path`; zeros where it printed nothing.
TargetFacts run_target(const std::string& path);

}  // namespace symtest

#endif  // INPROF_TESTS_SYMBOLICATE_RELEASE_TARGET_FACTS_H_
