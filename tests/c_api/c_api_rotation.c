/* The C API's rotation fields (rotate_interval_ns, keep_files), and the struct's growth kept
 * compatible with programs built before it grew:
 *
 *   c_api_rotation rotate DIR   rotates every 100 ms keeping 2 dumps, until DIR/r-4.inprof
 *                               exists; the test then finds exactly r-N and r-(N-1) left
 *   c_api_rotation legacy DIR   an old program's struct (no rotation fields), garbage after
 *                               it: init writes none of it, start reads none of it (one dump)
 *   c_api_rotation newer        a struct larger than the library's with a field it does not
 *                               know set: start refuses; with the extra bytes zero it would not
 */
#include <inprof/inprof.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile unsigned long sink;

/* Busy until `path` exists (NULL: never) or `ns` have passed. */
static void busy_until(const char* path, uint64_t ns) {
  for (uint64_t end = inprof_now() + ns; inprof_now() < end;) {
    if (path && access(path, F_OK) == 0) return;
    for (unsigned long i = 0; i < 100000; ++i) sink = sink + i;
  }
}

/* inprof_options as programs built before rotation_interval_ns see it. */
typedef struct legacy_options {
  uint64_t interval_ns;
  const char* output_path;
  size_t buffer_size;
  size_t stack_copy_size;
  size_t max_frames;
  int sample_signal;
  int unwinder;
  const char* thread_filters;
  int mode;
  unsigned ring_seconds;
  int capture_signal;
  int crash_capture;
  const char* crash_path;
} legacy_options;

int main(int argc, char** argv) {
  char path[4096];
  if (argc == 3 && strcmp(argv[1], "rotate") == 0) {
    inprof_options options;
    inprof_options_init(&options);
    if (options.rotate_interval_ns != 0 || options.keep_files != 0) return 1;
    snprintf(path, sizeof path, "%s/r-%%n.inprof", argv[2]);
    options.output_path = path;
    options.rotate_interval_ns = 100000000u;
    options.keep_files = 2;
    if (inprof_start(&options) != 0) {
      fprintf(stderr, "c_api_rotation: %s\n", inprof_last_error());
      return 1;
    }
    char fourth[4096];
    snprintf(fourth, sizeof fourth, "%s/r-4.inprof", argv[2]);
    busy_until(fourth, 60000000000ull); /* every 100 ms: made well before 60 s */
    return inprof_stop() == 0 ? 0 : 1;
  }
  if (argc == 3 && strcmp(argv[1], "legacy") == 0) {
    struct {
      legacy_options options;
      unsigned char after[64];
    } block;
    memset(&block, 0xa5, sizeof block);
    /* The library's own symbols, not the header's macros: what an old program calls. */
    (inprof_options_init)((inprof_options*)&block.options);
    for (size_t i = 0; i < sizeof block.after; ++i) {
      if (block.after[i] != 0xa5) {
        fprintf(stderr, "c_api_rotation: inprof_options_init wrote past an old struct\n");
        return 1;
      }
    }
    if (block.options.interval_ns != 0 || block.options.output_path != NULL) return 1;
    memset(block.after, 0xff, sizeof block.after); /* would be a huge rotate interval */
    snprintf(path, sizeof path, "%s/legacy.inprof", argv[2]);
    block.options.output_path = path;
    if ((inprof_start)((const inprof_options*)&block.options) != 0) {
      fprintf(stderr, "c_api_rotation: legacy start: %s\n", inprof_last_error());
      return 1;
    }
    busy_until(NULL, 400000000u); /* 400 ms: four rotations, had it rotated */
    return inprof_stop() == 0 ? 0 : 1;
  }
  if (argc == 2 && strcmp(argv[1], "newer") == 0) {
    struct {
      inprof_options options;
      uint64_t unknown_field;
    } newer;
    inprof_options_init_sized(&newer.options, sizeof newer);
    if (newer.unknown_field != 0) return 1;
    newer.unknown_field = 1;
    if (inprof_start_sized(&newer.options, sizeof newer) == 0) {
      fprintf(stderr, "c_api_rotation: a field the library does not know was accepted\n");
      return 1;
    }
    if (strstr(inprof_last_error(), "newer") == NULL) return 1;
    return inprof_is_running() ? 1 : 0;
  }
  fprintf(stderr, "usage: c_api_rotation rotate|legacy DIR | newer\n");
  return 2;
}
