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
 * why (a string owned by the library, valid on this thread until its next failing call).
 *
 * With INPROF_DISABLE defined, every function is an inline no-op (inprof_start fails with
 * "profiling was compiled out") and the program links without the library. */
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
  size_t stack_copy_size;     /* 0: 256 KiB */
  size_t max_frames;          /* 0: 4096 */
  int sample_signal;          /* 0: SIGURG */
  int unwinder;               /* 0 auto, 1 dwarf, 2 frame pointers */
  const char* thread_filters; /* NULL or comma-separated name substrings */
  int mode;                   /* 0 stream, 1 ring (flight recorder) */
  unsigned ring_seconds;      /* ring mode: keep at most this long in captures (0: all it holds) */
  int capture_signal;         /* ring mode: capture on this signal (0: none) */
  int crash_capture;          /* ring mode: 1 writes the ring on a crash */
  const char* crash_path;     /* NULL: output_path with "-crash" */
  /* Added in 0.2 (continuous mode, Options::rotate_interval and keep_files). Programs built
   * with an older header pass a shorter struct, which the library still reads as it was: see
   * inprof_start_sized below. */
  uint64_t rotate_interval_ns; /* 0: one dump; else a new window dump every this often */
  size_t keep_files;           /* with rotation: keep the newest this-many dumps (0: all) */
} inprof_options;

/* Category colours (inprof::Color). */
typedef enum inprof_color {
  INPROF_COLOR_GREY,
  INPROF_COLOR_TRANSPARENT,
  INPROF_COLOR_PURPLE,
  INPROF_COLOR_GREEN,
  INPROF_COLOR_ORANGE,
  INPROF_COLOR_YELLOW,
  INPROF_COLOR_LIGHT_BLUE,
  INPROF_COLOR_BLUE,
  INPROF_COLOR_BROWN,
  INPROF_COLOR_MAGENTA,
  INPROF_COLOR_RED,
  INPROF_COLOR_LIGHT_RED,
  INPROF_COLOR_DARK_GREY
} inprof_color;

/* Marker field formats (inprof::Format), for typed markers. */
typedef enum inprof_format {
  INPROF_FORMAT_STRING,
  INPROF_FORMAT_INTEGER,
  INPROF_FORMAT_DECIMAL,
  INPROF_FORMAT_BYTES,
  INPROF_FORMAT_PERCENTAGE,
  INPROF_FORMAT_DURATION,
  INPROF_FORMAT_MILLISECONDS,
  INPROF_FORMAT_MICROSECONDS,
  INPROF_FORMAT_NANOSECONDS,
  INPROF_FORMAT_FILE_PATH,
  INPROF_FORMAT_URL
} inprof_format;

/* A typed marker's field: its payload key, the label the marker table shows, its format. */
typedef struct inprof_marker_field {
  const char* key;
  const char* label;
  inprof_format format;
} inprof_marker_field;

/* One value of a typed marker, in the order of its type's fields: set the member the field's
 * format reads and leave the others zero (string for STRING, FILE_PATH and URL; decimal for
 * DECIMAL and PERCENTAGE; integer for the others). */
typedef struct inprof_marker_value {
  int64_t integer;
  double decimal;
  const char* string;
} inprof_marker_value;

/* A counter track (inprof::Counter); lives for the program. */
typedef struct inprof_counter inprof_counter;

#if !defined(INPROF_DISABLE)

/* Fills `options` with the defaults. */
INPROF_C_API void inprof_options_init(inprof_options* options);

INPROF_C_API int inprof_start(const inprof_options* options);

/* The same, told the size of the caller's struct: the options struct grows at its end, and
 * these read (and write) only the first `size` bytes of it, a field past them taking its
 * default. A program compiled with this header calls them through the macros below with
 * sizeof(inprof_options); one compiled before the struct grew calls inprof_options_init and
 * inprof_start, which keep the original size. inprof_start_sized fails if the caller's struct
 * is larger than this library's and sets a field it does not know (nonzero bytes past it). */
INPROF_C_API void inprof_options_init_sized(inprof_options* options, size_t size);
INPROF_C_API int inprof_start_sized(const inprof_options* options, size_t size);
#define inprof_options_init(options) inprof_options_init_sized((options), sizeof(inprof_options))
#define inprof_start(options) inprof_start_sized((options), sizeof(inprof_options))
INPROF_C_API int inprof_stop(void);
INPROF_C_API int inprof_is_running(void);
INPROF_C_API int inprof_pause(void);
INPROF_C_API int inprof_resume(void);
/* Ring mode: writes what the ring holds now to a dump at `path`; profiling goes on. */
INPROF_C_API int inprof_capture(const char* path);
/* Pull mode (docs/fleet.md): serves /debug/pprof/ on a loopback "HOST:PORT" or "unix:PATH";
 * scrapes sample with the default options unless a streaming session runs. */
INPROF_C_API int inprof_serve_pprof(const char* address);
INPROF_C_API int inprof_stop_serving_pprof(void);
INPROF_C_API const char* inprof_last_error(void);

INPROF_C_API void inprof_set_thread_name(const char* name);
/* Sampled even when thread filters would leave it out / never sampled (see profiler.h). */
INPROF_C_API void inprof_register_thread(const char* name);
INPROF_C_API void inprof_unregister_thread(void);

/* Markers. `category` is 0 (Other), a built-in id (1 Idle, 2 IO, 3 Network, 4 Graphics,
 * 5 Memory, 6 User) or one returned by inprof_define_category. Times come from inprof_now(). */
INPROF_C_API uint64_t inprof_now(void);
INPROF_C_API uint16_t inprof_define_category(const char* name, int color /* inprof_color */);
INPROF_C_API void inprof_marker(const char* name, uint16_t category);
INPROF_C_API void inprof_text_marker(const char* name, const char* text, uint16_t category);
INPROF_C_API void inprof_interval_marker(const char* name, uint64_t start, uint64_t end,
                                         uint16_t category);
/* An interval whose start and end are recorded apart (even on different threads). */
INPROF_C_API void inprof_interval_start(const char* name, uint16_t category);
INPROF_C_API void inprof_interval_end(const char* name, uint16_t category);
/* Typed markers: declare the type once (returns its id, 0 on a bad argument), then record
 * markers of it with their values (`count` values, one per field). */
INPROF_C_API uint32_t inprof_define_marker_type(const char* name, const inprof_marker_field* fields,
                                                size_t count, const char* table_label);
INPROF_C_API void inprof_typed_marker(const char* name, uint16_t category, uint32_t type,
                                      const inprof_marker_value* values, size_t count);

/* Counters: created once, then add or set from any thread (lock-free). */
INPROF_C_API inprof_counter* inprof_counter_create(const char* name, const char* description,
                                                   uint16_t category);
INPROF_C_API void inprof_counter_add(inprof_counter* counter, int64_t delta);
INPROF_C_API void inprof_counter_set(inprof_counter* counter, int64_t value);

/* Labels: push before a phase, pop after it, on the same thread. `name` must have static
 * storage (a string literal). Returns a token for inprof_label_pop. */
INPROF_C_API int inprof_label_push(const char* name, uint16_t category);
INPROF_C_API void inprof_label_pop(int token);

#else /* INPROF_DISABLE: compiled out, nothing needs the library */

static inline void inprof_options_init(inprof_options* options) {
  static inprof_options zero;
  if (options) *options = zero;
}
static inline int inprof_start(const inprof_options* options) {
  (void)options;
  return -1;
}
static inline int inprof_stop(void) { return -1; }
static inline int inprof_is_running(void) { return 0; }
static inline int inprof_pause(void) { return -1; }
static inline int inprof_resume(void) { return -1; }
static inline int inprof_capture(const char* path) {
  (void)path;
  return -1;
}
static inline int inprof_serve_pprof(const char* address) {
  (void)address;
  return -1;
}
static inline int inprof_stop_serving_pprof(void) { return -1; }
static inline const char* inprof_last_error(void) {
  return "profiling was compiled out (INPROF_DISABLE)";
}
static inline void inprof_set_thread_name(const char* name) { (void)name; }
static inline void inprof_register_thread(const char* name) { (void)name; }
static inline void inprof_unregister_thread(void) {}
static inline uint64_t inprof_now(void) { return 0; }
static inline uint16_t inprof_define_category(const char* name, int color) {
  (void)name;
  (void)color;
  return 0;
}
static inline void inprof_marker(const char* name, uint16_t category) {
  (void)name;
  (void)category;
}
static inline void inprof_text_marker(const char* name, const char* text, uint16_t category) {
  (void)name;
  (void)text;
  (void)category;
}
static inline void inprof_interval_marker(const char* name, uint64_t start, uint64_t end,
                                          uint16_t category) {
  (void)name;
  (void)start;
  (void)end;
  (void)category;
}
static inline void inprof_interval_start(const char* name, uint16_t category) {
  (void)name;
  (void)category;
}
static inline void inprof_interval_end(const char* name, uint16_t category) {
  (void)name;
  (void)category;
}
static inline uint32_t inprof_define_marker_type(const char* name,
                                                 const inprof_marker_field* fields, size_t count,
                                                 const char* table_label) {
  (void)name;
  (void)fields;
  (void)count;
  (void)table_label;
  return 0;
}
static inline void inprof_typed_marker(const char* name, uint16_t category, uint32_t type,
                                       const inprof_marker_value* values, size_t count) {
  (void)name;
  (void)category;
  (void)type;
  (void)values;
  (void)count;
}
static inline inprof_counter* inprof_counter_create(const char* name, const char* description,
                                                    uint16_t category) {
  (void)name;
  (void)description;
  (void)category;
  return (inprof_counter*)0;
}
static inline void inprof_counter_add(inprof_counter* counter, int64_t delta) {
  (void)counter;
  (void)delta;
}
static inline void inprof_counter_set(inprof_counter* counter, int64_t value) {
  (void)counter;
  (void)value;
}
static inline int inprof_label_push(const char* name, uint16_t category) {
  (void)name;
  (void)category;
  return 0;
}
static inline void inprof_label_pop(int token) { (void)token; }

#endif /* INPROF_DISABLE */

#ifdef __cplusplus
}
#endif

#endif /* INPROF_INPROF_H_ */
