// The address space is the program's (issue 39, item 9). Run with a limit (RLIMIT_AS, `ulimit
// -v`) of 128 MiB, set before the program image starts (it re-executes itself): two threads
// spinning and a 64 MiB block from malloc must fit, as they do unprofiled. The profiler's threads
// once took a glibc arena each on their first malloc (64 MiB of address space apiece) and ran on
// 8 MiB stacks: the block failed.
//
// The program also brings its own malloc family (forwarding to glibc's) and counts calls from
// threads it did not start, up to its very end: none may come (a profiler's threads never call
// malloc, nor while they write the profile at exit).
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "transparency.h"

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* block, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* block);
}

namespace {

constexpr size_t kLimitBytes = size_t{128} << 20;
constexpr size_t kBlockBytes = size_t{64} << 20;
constexpr int kThreads = 2;

// 0: not yet known; 1: the main thread or one of the program's; 2: a thread it did not start.
thread_local int t_whose = 0;
std::atomic<long> g_foreign_calls{0};

void note_call() {
  if (t_whose == 0) t_whose = syscall(SYS_gettid) == getpid() ? 1 : 2;
  if (t_whose == 2) g_foreign_calls.fetch_add(1, std::memory_order_relaxed);
}

void* spin(void*) {
  t_whose = 1;
  transparency::spin_cpu_ms(300);
  return nullptr;
}

}  // namespace

extern "C" {
void* malloc(size_t size) {
  note_call();
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  note_call();
  return __libc_calloc(count, size);
}
void* realloc(void* block, size_t size) {
  note_call();
  return __libc_realloc(block, size);
}
void* memalign(size_t alignment, size_t size) {
  note_call();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) { return memalign(alignment, size); }
int posix_memalign(void** out, size_t alignment, size_t size) {
  void* block = memalign(alignment, size);
  if (block == nullptr) return ENOMEM;
  *out = block;
  return 0;
}
void free(void* block) {
  if (block != nullptr) note_call();
  __libc_free(block);
}
}

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--limited") != 0) {
    const rlimit limit{kLimitBytes, kLimitBytes};
    if (setrlimit(RLIMIT_AS, &limit) != 0) return std::perror("setrlimit"), 2;
    char* again[] = {argv[0], const_cast<char*>("--limited"), nullptr};
    execv("/proc/self/exe", again);
    return std::perror("execv"), 2;
  }
  pthread_t threads[kThreads];
  for (pthread_t& t : threads) {
    if (pthread_create(&t, nullptr, spin, nullptr) != 0) return std::puts("no thread"), 1;
  }
  for (pthread_t& t : threads) pthread_join(t, nullptr);
  auto* block = static_cast<volatile char*>(malloc(kBlockBytes));
  std::printf("a %zu MiB block under a %zu MiB limit: %s\n", kBlockBytes >> 20, kLimitBytes >> 20,
              block ? "allocated" : "refused");
  if (block != nullptr) {
    block[0] = 1;
    block[kBlockBytes - 1] = 1;
    free(const_cast<char*>(block));
  }
  return 0;
}

// Last, after exit's handlers (a profiler's final write among them) have run.
__attribute__((destructor)) void report_foreign_calls() {
  std::printf("allocator calls from threads the program did not start: %ld\n",
              g_foreign_calls.load());
}
