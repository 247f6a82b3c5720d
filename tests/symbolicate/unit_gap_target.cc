// A program for unit_gap_test: built -O2 -g, its main (in .text.startup) and crt1.o's _start
// (no DWARF) sit side by side, and main's hot part ends in a landing pad whose line rows reach
// the end of its range, the layout in which libdw lends main's lines to _start.
#include <cstdio>
#include <string>
#include <thread>

namespace {
__attribute__((noinline)) int work(int n) {
  volatile int s = 0;
  for (int i = 0; i < n; ++i) s = s + i;
  return s;
}
}  // namespace

int main(int argc, char** argv) {
  std::string name = argc > 1 ? argv[1] : "none";
  std::thread a([] { std::printf("%d\n", work(1000)); });
  std::thread b([&] { std::printf("%s %d\n", name.c_str(), work(2000)); });
  a.join();
  b.join();
  std::printf("%s\n", name.c_str());
  return 0;
}
