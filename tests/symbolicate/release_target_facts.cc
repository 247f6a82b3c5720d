#include "release_target_facts.h"

#include <cstdio>

namespace symtest {

TargetFacts run_target(const std::string& path) {
  TargetFacts f;
  std::FILE* p = popen(("'" + path + "'").c_str(), "r");
  if (!p) return f;
  char line[256];
  while (std::fgets(line, sizeof line, p)) {
    unsigned long a;
    int x, y;
    if (std::sscanf(line, "leaf %lx %d", &a, &x) == 2) {
      f.leaf = a;
      f.leaf_line = x;
    } else if (std::sscanf(line, "inline_return %lx %d %d", &a, &x, &y) == 3) {
      f.inline_return = a;
      f.helper_call_line = x;
      f.outer_line = y;
    }
  }
  pclose(p);
  return f;
}

}  // namespace symtest
