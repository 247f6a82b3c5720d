/* A C program profiling itself through the C API, built by a project with no C++ at all. */
#include <inprof/inprof.h>
#include <stdio.h>

static double __attribute__((noipa)) work(int steps) {
  double sum = 0;
  for (int i = 0; i < steps; ++i) sum += (double)i / steps;
  return sum;
}

int main(int argc, char** argv) {
  inprof_options options;
  inprof_options_init(&options);
  options.output_path = argc > 1 ? argv[1] : "c_consumer.inprof";
  if (inprof_start(&options) != 0) {
    fprintf(stderr, "start: %s\n", inprof_last_error());
    return 1;
  }
  double result = work(20000000);
  if (inprof_stop() != 0) {
    fprintf(stderr, "stop: %s\n", inprof_last_error());
    return 1;
  }
  printf("result %f: profile written\n", result);
  return 0;
}
