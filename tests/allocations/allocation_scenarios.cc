// Allocations where an interposer is easy to get wrong (issue 24): in a thread's TLS
// destructors as it exits, in a dlopen'ed library's constructor (under the loader's lock), in a
// fork child, and in a signal handler that interrupts the allocator; and, first, the allocator's
// contract for blocks the profiler samples (at rate 1, every block: each carries a tag before
// it), through every entry point and through the C library's own reallocs. Run under
// `inprof record --allocations=...`: it must finish as it does unprofiled, and each site must
// show up in the profile's allocation sites (run_allocations_test.sh checks).
//
// Usage: allocation_scenarios PATH_TO_DLOPEN_LIBRARY
#include <dlfcn.h>
#include <malloc.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

namespace {

bool g_semantics_ok = true;
void expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "block semantics: %s\n", what);
    g_semantics_ok = false;
  }
}

bool aligned_to(const void* p, size_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

// Fills all of a block's usable size: a wrong usable size overwrites glibc's next chunk header,
// which glibc's own checks then report (or which the next allocations trip over).
void fill_usable(void* p, size_t at_least) {
  const size_t usable = malloc_usable_size(p);
  expect(usable >= at_least, "malloc_usable_size below the size asked for");
  std::memset(p, 0xA5, usable);
}

// The allocator's contract for sampled blocks (at rate 1, every block is sampled).
__attribute__((noinline)) bool block_semantics() {
  for (size_t size : {1, 15, 16, 24, 100, 4000, 200000}) {
    char* p = static_cast<char*>(std::malloc(size));
    expect(p != nullptr && aligned_to(p, 16), "malloc: null or not 16-aligned");
    fill_usable(p, size);
    // Grow and shrink: the contents stay.
    p = static_cast<char*>(std::realloc(p, size * 3));
    expect(p != nullptr && static_cast<unsigned char>(p[size - 1]) == 0xA5,
           "realloc grow lost data");
    fill_usable(p, size * 3);
    p = static_cast<char*>(std::realloc(p, size / 2 + 1));
    expect(p != nullptr && static_cast<unsigned char>(p[size / 2]) == 0xA5,
           "realloc shrink lost data");
    fill_usable(p, size / 2 + 1);
    std::free(p);
  }
  expect(std::realloc(std::malloc(40), 0) == nullptr, "realloc(p, 0) did not free");
  // A buffer grown by realloc to 48 MiB (glibc moves the large one by mremap): its first and
  // last bytes of each step survive every move.
  unsigned char* buffer = nullptr;
  size_t filled = 0;
  for (size_t size = 1000; size <= (size_t(48) << 20); size = size * 3 / 2) {
    buffer = static_cast<unsigned char*>(std::realloc(buffer, size));
    expect(buffer != nullptr, "realloc of a growing buffer failed");
    if (buffer == nullptr) return false;
    expect(
        filled == 0 || (buffer[0] == 1 && buffer[filled - 1] == static_cast<unsigned char>(filled)),
        "a growing buffer lost its contents");
    buffer[0] = 1;
    buffer[size - 1] = static_cast<unsigned char>(size);
    filled = size;
  }
  fill_usable(buffer, filled);
  std::free(buffer);
  void* grown = reallocarray(nullptr, 10, 10);
  grown = reallocarray(grown, 100, 10);
  expect(grown != nullptr, "reallocarray failed");
  fill_usable(grown, 1000);
  std::free(grown);
  char* zeroed = static_cast<char*>(std::calloc(1000, 3));
  bool all_zero = zeroed != nullptr;
  for (int i = 0; all_zero && i < 3000; ++i) all_zero = zeroed[i] == 0;
  expect(all_zero, "calloc: not zeroed");
  std::free(zeroed);
  for (size_t alignment : {8, 16, 32, 64, 256, 4096, 65536}) {
    void* p = nullptr;
    expect(posix_memalign(&p, alignment, 100) == 0 && aligned_to(p, alignment),
           "posix_memalign: not aligned");
    fill_usable(p, 100);
    p = std::realloc(p, 5000);  // a realloc of an aligned sampled block
    fill_usable(p, 5000);
    std::free(p);
    p = aligned_alloc(alignment, alignment * 2);
    expect(p != nullptr && aligned_to(p, alignment), "aligned_alloc: not aligned");
    fill_usable(p, alignment * 2);
    std::free(p);
    p = memalign(alignment, 33);
    expect(p != nullptr && aligned_to(p, alignment), "memalign: not aligned");
    std::free(p);
  }
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* v = valloc(100);
  expect(v != nullptr && aligned_to(v, page), "valloc: not page-aligned");
  fill_usable(v, 100);
  std::free(v);
  v = pvalloc(100);
  expect(v != nullptr && aligned_to(v, page), "pvalloc: not page-aligned");
  fill_usable(v, page);
  std::free(v);
  auto* over = new (std::align_val_t(128)) char[300];
  expect(aligned_to(over, 128), "aligned new: not aligned");
  ::operator delete[](over, std::align_val_t(128));
  auto* plain = new int[50]();
  expect(plain[49] == 0, "new int[](): not zeroed");
  delete[] plain;
  // The C library allocates and reallocates through the interposer too: strdup, getline's
  // buffer grown by its own realloc, open_memstream's buffer freed by the program.
  char* copy = strdup("a string the C library copies");
  expect(copy != nullptr && std::strcmp(copy, "a string the C library copies") == 0, "strdup");
  std::free(copy);
  char text[] = "first line\na much longer second line that makes getline grow its buffer\n";
  FILE* in = fmemopen(text, sizeof text - 1, "r");
  char* line = static_cast<char*>(std::malloc(4));
  size_t capacity = 4;
  int lines = 0;
  while (in && getline(&line, &capacity, in) > 0) ++lines;
  expect(lines == 2, "getline over a sampled buffer");
  std::free(line);
  if (in) std::fclose(in);
  char* stream_buffer = nullptr;
  size_t stream_size = 0;
  FILE* out = open_memstream(&stream_buffer, &stream_size);
  for (int i = 0; out && i < 1000; ++i) std::fprintf(out, "%d,", i);
  if (out) std::fclose(out);
  expect(stream_buffer != nullptr && stream_size > 3000, "open_memstream");
  std::free(stream_buffer);
  return g_semantics_ok;
}

std::atomic<void*> g_sink{nullptr};

__attribute__((noinline)) void thread_exit_site() {
  for (int i = 0; i < 200; ++i) {
    void* p = std::malloc(100 + i);
    g_sink.store(p);
    std::free(p);
  }
}

struct AllocatesAtExit {
  ~AllocatesAtExit() { thread_exit_site(); }
};

void thread_body() {
  thread_local AllocatesAtExit at_exit;
  (void)&at_exit;
  for (int i = 0; i < 100; ++i) delete[] new char[64];
}

__attribute__((noinline)) void fork_child_site() {
  for (int i = 0; i < 1000; ++i) {
    void* p = std::malloc(256);
    g_sink.store(p);
    std::free(p);
  }
}

std::atomic<int> g_handler_runs{0};

__attribute__((noinline)) void signal_handler_site() {
  void* p = std::malloc(48);  // not async-signal-safe; programs do it anyway
  g_sink.store(p);
  std::free(p);
}

void on_alarm(int) {
  signal_handler_site();
  g_handler_runs.fetch_add(1);
}

// Allocates, then computes for a while: most timer signals land outside the allocator (one
// landing inside the profiler's recording path is not recorded, by design).
__attribute__((noinline)) void main_loop_site(int rounds) {
  for (int i = 0; i < rounds; ++i) {
    void* p = std::malloc(32 + i % 512);
    g_sink.store(p);
    std::free(p);
    volatile uint64_t x = 1;
    for (int k = 0; k < 20000; ++k) x = x * 6364136223846793005ull + 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: allocation_scenarios DLOPEN_LIBRARY\n");
    return 2;
  }
  if (!block_semantics()) return 1;
  // Blocks the parent allocated (and sampled) are freed and reallocated by a fork child.
  std::vector<char*> inherited;
  for (int i = 0; i < 64; ++i) inherited.push_back(static_cast<char*>(std::malloc(64 + i)));
  // Thread exit: TLS destructors allocate after the thread's function returned.
  for (int round = 0; round < 4; ++round) {
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) threads.emplace_back(thread_body);
    for (auto& t : threads) t.join();
  }
  // dlopen: the library's constructor allocates while the loader holds its lock.
  void* library = dlopen(argv[1], RTLD_NOW);
  if (!library) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  auto* kept = reinterpret_cast<void* (*)()>(dlsym(library, "dlopen_constructor_kept"));
  if (!kept || !kept()) return 1;
  // fork: the child allocates (and exits normally, writing its own dump if profiled).
  const pid_t child = fork();
  if (child == 0) {
    fork_child_site();
    for (size_t i = 0; i < inherited.size(); ++i) {
      inherited[i] = static_cast<char*>(std::realloc(inherited[i], 1000));
      std::free(inherited[i]);
    }
    std::exit(0);
  }
  for (char* block : inherited) std::free(block);
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "fork child failed\n");
    return 1;
  }
  // A signal handler that allocates, interrupting allocations. glibc deadlocks if the signal
  // lands while a malloc holds its arena lock, which a malloc takes when its size class's
  // per-thread cache is empty; so the size classes both use are filled first, as a program whose
  // handler allocates has to count on (the profiler's own calls of other sizes hold signals).
  main_loop_site(10);
  signal_handler_site();
  struct sigaction action {};
  action.sa_handler = on_alarm;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &action, nullptr);
  itimerval timer{{0, 200}, {0, 200}};
  setitimer(ITIMER_REAL, &timer, nullptr);
  for (int i = 0; i < 20000 && g_handler_runs.load() < 50; ++i) main_loop_site(10);
  itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
  signal(SIGALRM, SIG_IGN);
  if (g_handler_runs.load() == 0) {
    std::fprintf(stderr, "the timer never fired\n");
    return 1;
  }
  std::printf("ok handler_runs=%d\n", g_handler_runs.load());
  return 0;
}
