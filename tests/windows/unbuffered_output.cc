// Linked into the Windows test programs: their standard output is unbuffered. Under Wine with
// ctest it is a pipe, which the C runtime buffers whole, so a program that dies loses everything it
// printed, down to GoogleTest's name of the test that was running. Unbuffered, a failure under
// ctest shows how far the program got.
#include <cstdio>

namespace {

[[maybe_unused]] const bool kOutputUnbuffered = [] {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  return true;
}();

}  // namespace
