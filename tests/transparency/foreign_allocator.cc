// A program linked with an allocator of its own (jemalloc), the way services are. Under the
// allocation interposer it must keep that allocator: malloc must still be jemalloc's (its own
// counters move), and blocks must cross between the standard functions and jemalloc's own API
// (mallocx/sdallocx/dallocx) both ways, as they do unprofiled. It prints only facts that must not
// change, and allocates known bytes at named sites for the profile:
//   small_site  4 threads x 10,000 x 100 bytes, freed   (4,000,000)
//   large_site     100 x 64 KiB, freed          (6,553,600)
//   leak_site      100 x 1,000 bytes, kept      (100,000)
// Usage: t_foreign_allocator (run by run_transparency.sh, and by
// tests/allocations/run_foreign_allocator_test.sh for its sites)
#include <malloc.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

// jemalloc's own API (Debian's libjemalloc2: unprefixed names). Declared here, so that the
// program needs the library only, not its headers.
extern "C" {
void* mallocx(size_t size, int flags);
void sdallocx(void* block, size_t size, int flags);
void dallocx(void* block, int flags);
int mallctl(const char* name, void* old_value, size_t* old_size, void* new_value, size_t new_size);
}

namespace {

int failures = 0;
void check(bool ok, const char* what) {
  std::printf("%s: %s\n", what, ok ? "yes" : "NO");
  if (!ok) ++failures;
}

uint64_t thread_allocated() {
  uint64_t value = 0;
  size_t size = sizeof(value);
  if (mallctl("thread.allocated", &value, &size, nullptr, 0) != 0) return 0;
  return value;
}

__attribute__((noinline)) void small_site(std::vector<void*>& out) {
  for (int i = 0; i < 10000; ++i) out.push_back(malloc(100));
}

__attribute__((noinline)) void large_site(std::vector<void*>& out) {
  for (int i = 0; i < 100; ++i) out.push_back(malloc(64 << 10));
}

__attribute__((noinline)) void leak_site(std::vector<void*>& out) {
  for (int i = 0; i < 100; ++i) out.push_back(malloc(1000));
}

bool aligned_to(const void* block, size_t alignment) {
  return block != nullptr && reinterpret_cast<uintptr_t>(block) % alignment == 0;
}

}  // namespace

int main() {
  // malloc is the program's allocator: jemalloc counts what this thread allocates (its counter
  // readied first by a block of its own).
  dallocx(mallocx(64, 0), 0);
  const uint64_t before = thread_allocated();
  void* counted = malloc(1 << 20);
  asm volatile("" : : "r"(counted) : "memory");  // kept, not folded away with its free
  const uint64_t after = thread_allocated();
  check(after >= before + (1 << 20), "malloc is jemalloc's");
  free(counted);
  const uint64_t before_new = thread_allocated();
  auto* array = new char[1 << 20];
  asm volatile("" : : "r"(array) : "memory");
  check(thread_allocated() >= before_new + (1 << 20), "new is jemalloc's");
  delete[] array;

  // Blocks cross between the standard functions and jemalloc's own, both ways.
  void* a = mallocx(100, 0);
  std::memset(a, 1, 100);
  free(a);
  void* b = malloc(100);
  std::memset(b, 2, 100);
  sdallocx(b, 100, 0);
  void* c = calloc(10, 10);
  check(c != nullptr && static_cast<unsigned char*>(c)[99] == 0, "calloc zeroes");
  dallocx(c, 0);
  void* d = realloc(mallocx(50, 0), 5000);
  std::memset(d, 3, 5000);
  sdallocx(d, 5000, 0);
  void* e = realloc(nullptr, 300);
  e = realloc(e, 70000);
  dallocx(e, 0);
  std::printf("blocks cross between malloc and mallocx: yes\n");

  // Aligned blocks and sizes, as the allocator gives them.
  void* p = nullptr;
  check(posix_memalign(&p, 64, 1000) == 0 && aligned_to(p, 64), "posix_memalign 64");
  free(p);
  void* q = aligned_alloc(4096, 8192);
  check(aligned_to(q, 4096), "aligned_alloc 4096");
  free(q);
  void* r = memalign(256, 300);
  check(aligned_to(r, 256), "memalign 256");
  free(r);
  void* v = valloc(100);
  check(aligned_to(v, static_cast<size_t>(getpagesize())), "valloc");
  free(v);
  void* s = malloc(100);
  check(malloc_usable_size(s) >= 100, "malloc_usable_size");
  free(s);
  auto text = std::make_unique<std::string>(1000, 'x');
  check(text->size() == 1000, "std::string");

  // The known sites, on four threads and this one.
  std::vector<void*> kept;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([] {
      std::vector<void*> blocks;
      blocks.reserve(10000);
      small_site(blocks);
      for (void* block : blocks) free(block);
    });
  }
  for (auto& t : threads) t.join();
  std::vector<void*> blocks;
  blocks.reserve(10000);
  large_site(blocks);
  for (void* block : blocks) free(block);
  kept.reserve(100);
  leak_site(kept);
  std::printf("sites done: %zu blocks kept\n", kept.size());
  return failures == 0 ? 0 : 1;
}
