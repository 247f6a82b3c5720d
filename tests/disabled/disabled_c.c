/* The C API with INPROF_DISABLE: every function an inline no-op, linked without the library
 * (issue 23, item 14). Exits 0 when each call behaves as documented for a compiled-out build. */
#define INPROF_DISABLE
#include <inprof/inprof.h>
#include <stdio.h>

int main(void) {
  inprof_options options;
  inprof_options_init(&options);
  if (inprof_start(&options) == 0 || inprof_is_running()) return 1;
  inprof_marker("m", 0);
  inprof_text_marker("m", "t", 0);
  inprof_interval_start("i", 0);
  inprof_interval_end("i", 0);
  inprof_interval_marker("i", inprof_now(), inprof_now(), 0);
  inprof_marker_field field = {"bytes", "Size", INPROF_FORMAT_BYTES};
  uint32_t type = inprof_define_marker_type("T", &field, 1, NULL);
  inprof_marker_value value = {42, 0, NULL};
  inprof_typed_marker("t", inprof_define_category("C", INPROF_COLOR_RED), type, &value, 1);
  inprof_counter* counter = inprof_counter_create("c", NULL, 0);
  inprof_counter_add(counter, 1);
  inprof_counter_set(counter, 2);
  inprof_label_pop(inprof_label_push("l", 0));
  inprof_set_thread_name("n");
  if (inprof_stop() == 0 || counter != NULL) return 1;
  printf("disabled C API: %s\n", inprof_last_error());
  return 0;
}
