/* inprof's C API: the profiler for C programs and other languages' FFI. Same semantics as the
 * C++ API in <inprof/profiler.h> and <inprof/markers.h>; every function is thread-safe.
 *
 *   inprof_options opts;
 *   inprof_options_init(&opts);
 *   opts.output_path = "app.inprof";
 *   if (inprof_start(&opts) != 0) fprintf(stderr, "%s\n", inprof_last_error());
 *   ...
 *   inprof_stop();
 *
 * Functions that can fail return 0 on success and -1 on failure; inprof_last_error() then says
 * why (a string owned by the library, valid on this thread until its next failing call). */
#ifndef INPROF_INPROF_H_
#define INPROF_INPROF_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define INPROF_C_API
#else
#define INPROF_C_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct inprof_options {
  uint64_t interval_ns;       /* 0: 1 ms */
  const char* output_path;    /* NULL: "inprof-<pid>.inprof" */
  size_t buffer_size;         /* 0: 8 MiB */
  size_t stack_copy_size;     /* 0: 64 KiB */
  size_t max_frames;          /* 0: 512 */
  int sample_signal;          /* 0: SIGURG */
  int unwinder;               /* 0 auto, 1 dwarf, 2 frame pointers */
  const char* thread_filters; /* NULL or comma-separated name substrings */
  int mode;                   /* 0 stream, 1 ring (flight recorder) */
  unsigned ring_seconds;      /* ring mode: keep at most this long in captures (0: all it holds) */
  int capture_signal;         /* ring mode: capture on this signal (0: none) */
  int crash_capture;          /* ring mode: 1 writes the ring on a crash */
  const char* crash_path;     /* NULL: output_path with "-crash" */
} inprof_options;

/* Fills `options` with the defaults. */
INPROF_C_API void inprof_options_init(inprof_options* options);

INPROF_C_API int inprof_start(const inprof_options* options);
INPROF_C_API int inprof_stop(void);
INPROF_C_API int inprof_is_running(void);
INPROF_C_API int inprof_pause(void);
INPROF_C_API int inprof_resume(void);
/* Ring mode: writes what the ring holds now to a dump at `path`; profiling goes on. */
INPROF_C_API int inprof_capture(const char* path);
INPROF_C_API const char* inprof_last_error(void);

INPROF_C_API void inprof_set_thread_name(const char* name);
/* Sampled even when thread filters would leave it out / never sampled (see profiler.h). */
INPROF_C_API void inprof_register_thread(const char* name);
INPROF_C_API void inprof_unregister_thread(void);

/* Markers. `category` is 0 (Other), a built-in id (1 Idle, 2 IO, 3 Network, 4 Graphics,
 * 5 Memory, 6 User) or one returned by inprof_define_category. Times come from inprof_now(). */
INPROF_C_API uint64_t inprof_now(void);
INPROF_C_API uint16_t inprof_define_category(const char* name, int color);
INPROF_C_API void inprof_marker(const char* name, uint16_t category);
INPROF_C_API void inprof_text_marker(const char* name, const char* text, uint16_t category);
INPROF_C_API void inprof_interval_marker(const char* name, uint64_t start, uint64_t end,
                                         uint16_t category);

/* Labels: push before a phase, pop after it, on the same thread. `name` must have static
 * storage (a string literal). Returns a token for inprof_label_pop. */
INPROF_C_API int inprof_label_push(const char* name, uint16_t category);
INPROF_C_API void inprof_label_pop(int token);

#ifdef __cplusplus
}
#endif

#endif /* INPROF_INPROF_H_ */
