/* The C API: profile a C program, with a marker, a label and a thread name.
 *
 *   ./c_usage [output.inprof]
 *   symbolicate output.inprof -o profile.json */
#include <inprof/inprof.h>
#include <stdio.h>

/* noipa: GCC may otherwise see that integrate() is pure and move the call past inprof_stop(). */
static double __attribute__((noipa)) integrate(int steps) {
  double sum = 0;
  for (int i = 0; i < steps; ++i) {
    double x = (double)i / steps;
    sum += x * x / steps;
  }
  return sum;
}

int main(int argc, char** argv) {
  inprof_options options;
  inprof_options_init(&options);
  options.output_path = argc > 1 ? argv[1] : "c_usage.inprof";
  if (inprof_start(&options) != 0) {
    fprintf(stderr, "cannot start the profiler: %s\n", inprof_last_error());
    return 1;
  }
  inprof_set_thread_name("c-main");
  uint64_t begin = inprof_now();
  int label = inprof_label_push("Integrate", 6 /* User */);
  double result = integrate(200000000);
  inprof_label_pop(label);
  inprof_interval_marker("integration", begin, inprof_now(), 0);
  inprof_text_marker("result", "computed", 0);
  if (inprof_stop() != 0) {
    fprintf(stderr, "profile incomplete: %s\n", inprof_last_error());
    return 1;
  }
  printf("result %f; profile written to %s\n", result, options.output_path);
  return 0;
}
