// profile_check FILE.json: checks a processed-format profile's structure (see profile_checker.h).
// Exit status: 0 well formed, 1 problems found, 2 unreadable or not JSON.
#include <iostream>

#include "profile_checker.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: profile_check FILE.json\n";
    return 2;
  }
  return inprof::test_support::run_profile_check(argv[1], std::cout, std::cerr);
}
