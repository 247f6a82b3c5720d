/* Every C API feature in one session (issue 23, item 14): a category with a colour, instant,
 * text, interval (recorded apart) and typed markers, a counter, a label. The test symbolicates
 * the dump and looks for each. */
#include <inprof/inprof.h>
#include <stdio.h>

static volatile unsigned long sink;

int main(int argc, char** argv) {
  inprof_options options;
  inprof_options_init(&options);
  options.output_path = argc > 1 ? argv[1] : "c_api.inprof";
  if (inprof_start(&options) != 0) {
    fprintf(stderr, "c_api_features: %s\n", inprof_last_error());
    return 1;
  }
  uint16_t db = inprof_define_category("c-api-category", INPROF_COLOR_PURPLE);
  inprof_marker_field fields[] = {{"url", "URL", INPROF_FORMAT_URL},
                                  {"bytes", "Size", INPROF_FORMAT_BYTES}};
  uint32_t request = inprof_define_marker_type("CApiRequest", fields, 2, "{marker.data.url}");
  inprof_counter* queue = inprof_counter_create("c-api-counter", "items queued", db);
  inprof_interval_start("c-api-interval", db);
  int label = inprof_label_push("c-api-label", db);
  /* Busy for 300 ms of CPU-bound work, so that samples carry the label. */
  for (uint64_t end = inprof_now() + 300000000u; inprof_now() < end;) {
    for (unsigned long i = 0; i < 100000; ++i) sink = sink + i;
  }
  inprof_label_pop(label);
  inprof_counter_add(queue, 3);
  inprof_counter_set(queue, 7);
  inprof_marker_value values[] = {{0, 0, "https://example.org/c-api"}, {1234, 0, NULL}};
  inprof_typed_marker("c-api-typed", db, request, values, 2);
  inprof_text_marker("c-api-text", "hello", db);
  inprof_interval_end("c-api-interval", db);
  if (request == 0 || queue == NULL) return 1;
  return inprof_stop() == 0 ? 0 : 1;
}
