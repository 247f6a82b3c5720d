/* A program no preloaded library can reach (linked statically): it creates the file it is given,
   to show whether it ran. */
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc > 1) {
    FILE* f = fopen(argv[1], "w");
    if (f) fclose(f);
  }
  return 0;
}
