// What exec_keeps_dump.sh profiles: computes for ~1 s in first_image_busy, then execs itself with
// --second, which computes for ~1 s in second_image_busy. Each prints one line.
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "transparency.h"

extern "C" __attribute__((noinline)) void first_image_busy() { transparency::spin_cpu_ms(1000); }
extern "C" __attribute__((noinline)) void second_image_busy() { transparency::spin_cpu_ms(1000); }

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--second") == 0) {
    second_image_busy();
    std::printf("second image: done\n");
    return 0;
  }
  first_image_busy();
  std::printf("first image: exec\n");
  std::fflush(stdout);
  char self[] = "/proc/self/exe";
  char arg[] = "--second";
  char* args[] = {self, arg, nullptr};
  execv(self, args);
  std::printf("exec failed\n");
  return 1;
}
