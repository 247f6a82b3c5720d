// A program that defines malloc and free itself (as one linking an allocator statically does)
// but not C++ new: libstdc++'s new then reaches the program's malloc. Under the allocation
// interposer, whose new and delete come before libstdc++'s, they must reach the program's
// allocator as well, not glibc's. The program's allocator puts a header before each block and
// counts the bytes; it prints only facts that must not change.
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
void* __libc_malloc(size_t size);
void __libc_free(void* block);
}

namespace {

constexpr uint64_t kMagic = 0x0B5E55EDA110C8EDull;
struct Header {
  uint64_t magic;
  uint64_t size;
};
std::atomic<uint64_t> g_allocated{0};
std::atomic<uint64_t> g_foreign_frees{0};  // frees of blocks this allocator did not make

Header* header_of(void* block) { return static_cast<Header*>(block) - 1; }

}  // namespace

extern "C" {
void* malloc(size_t size) {
  auto* h = static_cast<Header*>(__libc_malloc(sizeof(Header) + size));
  if (h == nullptr) return nullptr;
  h->magic = kMagic;
  h->size = size;
  g_allocated.fetch_add(size, std::memory_order_relaxed);
  return h + 1;
}
void free(void* block) {
  if (block == nullptr) return;
  Header* h = header_of(block);
  if (h->magic != kMagic) {
    g_foreign_frees.fetch_add(1, std::memory_order_relaxed);
    return;  // not ours: leaked rather than crash, and counted
  }
  h->magic = 0;
  __libc_free(h);
}
void* calloc(size_t count, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  void* block = malloc(bytes);
  return block != nullptr ? std::memset(block, 0, bytes) : nullptr;
}
void* realloc(void* block, size_t size) {
  if (block == nullptr) return malloc(size);
  if (size == 0) {
    free(block);
    return nullptr;
  }
  void* fresh = malloc(size);
  if (fresh == nullptr) return nullptr;
  const size_t old = header_of(block)->magic == kMagic ? header_of(block)->size : 0;
  std::memcpy(fresh, block, old < size ? old : size);
  free(block);
  return fresh;
}
size_t malloc_usable_size(void* block) {
  return block != nullptr && header_of(block)->magic == kMagic ? header_of(block)->size : 0;
}
}

int main() {
  const uint64_t before = g_allocated.load();
  auto* array = new char[1 << 20];
  asm volatile("" : : "r"(array) : "memory");
  std::printf("new is the program's malloc: %s\n",
              g_allocated.load() >= before + (1 << 20) ? "yes" : "NO");
  delete[] array;
  std::vector<std::string> words;
  for (int i = 0; i < 10000; ++i)
    words.push_back(std::string(100, static_cast<char>('a' + i % 26)));
  size_t total = 0;
  for (const auto& w : words) total += w.size();
  words.clear();
  words.shrink_to_fit();
  void* block = malloc(100);
  block = realloc(block, 5000);
  std::printf("usable size: %s\n", malloc_usable_size(block) >= 5000 ? "yes" : "NO");
  free(block);
  std::printf("%zu bytes in strings; frees of blocks the program's malloc did not make: %llu\n",
              total, static_cast<unsigned long long>(g_foreign_frees.load()));
  return 0;
}
